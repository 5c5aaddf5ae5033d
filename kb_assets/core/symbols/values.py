"""Small, JSON summaries of expressions as written: what a value, base, decorator or annotation *is*.

Nothing is resolved here (that needs the whole commit); a summary keeps exactly what a resolver
needs to resolve it later, and nothing that depends on where the code sits in its file:

* ``{"kind": "name", "dotted": "sa.orm.relationship"}`` — a name or attribute chain;
* ``{"kind": "call", "callee": "APIRouter", "args": [V...], "kwargs": {"prefix": V}}`` — ``callee``
  is null when it is not a dotted name (``f()()``);
* ``{"kind": "subscript", "dotted": "Generic", "index": [V...]}`` — ``Generic[T]``, ``Mapped[int]``;
* ``{"kind": "union", "items": [V...]}`` — ``A | B | None`` (annotations);
* ``{"kind": "literal", "value": ...}`` — strings, numbers, booleans, None, and lists/tuples/dicts
  of them (tuples become lists);
* ``{"kind": "other"}`` — anything else, and anything deeper or bigger than the bounds below.
"""

from __future__ import annotations

import ast
import math
from typing import TYPE_CHECKING

from kb_assets.core.models import JSON

if TYPE_CHECKING:
    from tree_sitter import Node

    from kb_assets.core.spans import ParsedSource

MAX_DEPTH = 4
"""Nesting depth kept in a summary (``Depends(get_db)`` inside a call's kwargs is depth 2)."""

MAX_ITEMS = 12
"""Arguments, keyword arguments and subscript items kept per level."""

MAX_INDEX_ITEMS = 64
"""Subscript items and union members kept (``Union[...]`` of a few dozen models is common)."""

MAX_LITERAL_CHARS = 400
"""Longest literal source text turned into a value (bigger tables are just ``other``)."""

OTHER: dict[str, JSON] = {"kind": "other"}

_UNWRAP = frozenset({"parenthesized_expression", "type"})
_LITERAL_LEAVES = frozenset({"string", "concatenated_string", "integer", "float", "true", "false", "none"})
_LITERAL_CONTAINERS = frozenset({"list", "tuple", "dictionary", "pair", "expression_list"})


def dotted_name(source: ParsedSource, node: Node | None) -> str | None:
    """``a.b.c`` for an identifier or an attribute chain of identifiers, else None."""
    parts: list[str] = []
    while node is not None and node.type == "attribute":
        attr = node.child_by_field_name("attribute")
        if attr is None:
            return None
        parts.append(source.text(attr))
        node = node.child_by_field_name("object")
    if node is None or node.type != "identifier":
        return None
    parts.append(source.text(node))
    return ".".join(reversed(parts))


def summarize(source: ParsedSource, node: Node | None, depth: int = 0) -> dict[str, JSON]:
    """The summary of one expression node (see the module docstring)."""
    node = unwrap(node)
    if node is None or depth > MAX_DEPTH:
        return dict(OTHER)
    dotted = dotted_name(source, node)
    if dotted is not None:
        return {"kind": "name", "dotted": dotted}
    if node.type == "call":
        return _call(source, node, depth)
    if node.type in ("subscript", "generic_type"):
        return _subscript(source, node, depth)
    if node.type == "binary_operator" and _operator(source, node) == "|":
        return _union(source, node, depth)
    value = literal_value(source, node)
    return {"kind": "literal", "value": value[0]} if value is not None else dict(OTHER)


def unwrap(node: Node | None) -> Node | None:
    """Step through parentheses and the ``type`` wrapper of annotations."""
    while node is not None and node.type in _UNWRAP and node.named_child_count == 1:
        node = node.named_child(0)
    return node


def literal_value(source: ParsedSource, node: Node) -> tuple[JSON] | None:
    """``(value,)`` when ``node`` is a plain literal with a JSON value, else None."""
    if not _is_literal(node, 0) or node.end_byte - node.start_byte > MAX_LITERAL_CHARS:
        return None
    try:
        value = ast.literal_eval(source.text(node))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    converted = _to_json(value)
    return (converted,) if converted is not _NOT_JSON else None


def _call(source: ParsedSource, node: Node, depth: int) -> dict[str, JSON]:
    args: list[JSON] = []
    kwargs: dict[str, JSON] = {}
    arguments = node.child_by_field_name("arguments")
    for arg in (
        arguments.named_children if arguments is not None and arguments.type == "argument_list" else []
    ):
        if arg.type == "comment":
            continue
        if arg.type == "keyword_argument":
            name, value = arg.child_by_field_name("name"), arg.child_by_field_name("value")
            if name is not None and len(kwargs) < MAX_ITEMS:
                kwargs[source.text(name)] = summarize(source, value, depth + 1)
        elif len(args) < MAX_ITEMS:
            args.append(summarize(source, arg, depth + 1))
    callee = dotted_name(source, unwrap(node.child_by_field_name("function")))
    return {"kind": "call", "callee": callee, "args": args, "kwargs": kwargs}


def _union(source: ParsedSource, node: Node, depth: int) -> dict[str, JSON]:
    """``A | B | C``: one flat union; the left-nested chain costs one level of depth, not one per
    ``|`` (a long union keeps every member, up to ``MAX_INDEX_ITEMS``)."""
    operands: list[Node | None] = []
    current: Node | None = node
    while (
        current is not None
        and current.type == "binary_operator"
        and _operator(source, current) == "|"
        and len(operands) < MAX_INDEX_ITEMS
    ):
        operands.append(current.child_by_field_name("right"))
        current = unwrap(current.child_by_field_name("left"))
    operands.append(current)
    items = [summarize(source, side, depth + 1) for side in reversed(operands)]
    flat = [i for item in items for i in (item["items"] if item["kind"] == "union" else [item])]
    return {"kind": "union", "items": flat}


def _subscript(source: ParsedSource, node: Node, depth: int) -> dict[str, JSON]:
    if node.type == "generic_type":
        head = node.named_child(0) if node.named_child_count else None
        params = next((c for c in node.named_children if c.type == "type_parameter"), None)
        items = list(params.named_children) if params is not None else []
    else:
        head = node.child_by_field_name("value")
        items = node.children_by_field_name("subscript")
    kept = items[:MAX_INDEX_ITEMS]
    index = [summarize(source, item, depth + 1) for item in kept if item.type != "comment"]
    return {"kind": "subscript", "dotted": dotted_name(source, unwrap(head)), "index": index}


def _operator(source: ParsedSource, node: Node) -> str:
    op = node.child_by_field_name("operator")
    return source.text(op) if op is not None else ""


def _is_literal(node: Node, depth: int) -> bool:
    if depth > MAX_DEPTH:
        return False
    if node.type in _LITERAL_LEAVES:
        return node.type != "string" or not any(c.type == "interpolation" for c in node.children)
    if node.type == "unary_operator":
        arg = node.child_by_field_name("argument")
        return arg is not None and arg.type in ("integer", "float")
    if node.type in _LITERAL_CONTAINERS or node.type == "parenthesized_expression":
        kids = [c for c in node.named_children if c.type != "comment"]
        return len(kids) <= 64 and all(_is_literal(c, depth + 1) for c in kids)
    return False


_NOT_JSON = object()


def _to_json(value: object) -> JSON:
    """A JSON value for a literal (tuples as lists), or ``_NOT_JSON`` (bytes, sets, nan, ...)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else _NOT_JSON
    if isinstance(value, list | tuple):
        items = [_to_json(v) for v in value]
        return _NOT_JSON if any(i is _NOT_JSON for i in items) else items
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        converted = {k: _to_json(v) for k, v in value.items()}
        return _NOT_JSON if any(v is _NOT_JSON for v in converted.values()) else converted
    return _NOT_JSON
