"""Summaries of routing expressions for the ``api_routes`` facts, as written (nothing resolved).

``symbols.values.summarize`` extended for what prefixes and includes need: list/tuple/set displays
become ``{"kind": "list", "items": [V]}``, f-strings ``{"kind": "fstring", "parts": [V]}``, ``a + b``
``{"kind": "concat", "items": [V]}``, and calls keep these forms in their arguments.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kb_assets.core.models import JSON
from kb_assets.core.symbols.values import dotted_name, summarize, unwrap

if TYPE_CHECKING:
    from tree_sitter import Node

    from kb_assets.core.spans import ParsedSource

_SEQUENCES = frozenset({"list", "tuple", "set", "expression_list"})
_MAX_ITEMS = 64


def summarize_call(src: ParsedSource, node: Node) -> dict[str, JSON]:
    """``{"callee", "args", "kwargs"}`` of a call, its arguments summarized with ``value``."""
    args: list[JSON] = []
    kwargs: dict[str, JSON] = {}
    arguments = node.child_by_field_name("arguments")
    for arg in arguments.named_children if arguments is not None else []:
        if arg.type == "keyword_argument":
            name, value = arg.child_by_field_name("name"), arg.child_by_field_name("value")
            if name is not None and value is not None:
                kwargs[src.text(name)] = summarize_value(src, value)
        elif arg.type != "comment" and len(args) < _MAX_ITEMS:
            args.append(summarize_value(src, arg))
    callee = dotted_name(src, unwrap(node.child_by_field_name("function")))
    return {"callee": callee, "args": args, "kwargs": kwargs}


def summarize_value(src: ParsedSource, expr: Node | None, depth: int = 0) -> JSON:
    """A summary of an expression; displays, f-strings and ``+`` are kept apart (see above)."""
    node = unwrap(expr)
    if node is None or depth > 4:
        return {"kind": "other"}
    if node.type in _SEQUENCES:
        items = [c for c in node.named_children if c.type != "comment"][:_MAX_ITEMS]
        return {"kind": "list", "items": [summarize_value(src, c, depth + 1) for c in items]}
    if node.type == "string" and any(c.type == "interpolation" for c in node.children):
        return {"kind": "fstring", "parts": _fstring(src, node, depth)}
    if node.type == "binary_operator" and _operator(src, node) == "+":
        sides = (node.child_by_field_name("left"), node.child_by_field_name("right"))
        return {
            "kind": "concat",
            "items": [summarize_value(src, s, depth + 1) for s in sides if s is not None],
        }
    if node.type == "call":
        return {"kind": "call", **summarize_call(src, node)} if depth < 3 else summarize(src, node)
    return summarize(src, node, depth)


def _fstring(src: ParsedSource, node: Node, depth: int) -> list[JSON]:
    """The parts of an f-string: literal text and interpolated expressions (format specs dropped)."""
    parts: list[JSON] = []
    for child in node.children:
        if child.type == "string_content":
            parts.append({"kind": "literal", "value": src.text(child)})
        elif child.type == "interpolation":
            expr = child.child_by_field_name("expression")
            spec = child.child_by_field_name("format_specifier")
            conversion = child.child_by_field_name("type_conversion")
            if spec is not None or conversion is not None or expr is None:
                parts.append({"kind": "other"})
            else:
                parts.append(summarize_value(src, expr, depth + 1))
    return parts


_LITERALS = frozenset({"string", "integer", "float", "true", "false", "none", "concatenated_string"})


def plain_literal(node: Node, depth: int = 0) -> bool:
    """A literal without interpolation (or a display of them): nothing to resolve in it."""
    if node.type in _LITERALS:
        return not any(c.type == "interpolation" for c in node.children)
    if node.type in ("list", "tuple", "dictionary", "pair", "set") and depth < 3:
        return all(plain_literal(c, depth + 1) for c in node.named_children if c.type != "comment")
    return False


def names_something(value: JSON) -> bool:
    """True for a summary that names something (a possible router passed along)."""
    return isinstance(value, dict) and value.get("kind") == "name"


def _operator(source: ParsedSource, node: Node) -> str:
    op = node.child_by_field_name("operator")
    return source.text(op) if op is not None else ""
