"""What a module-level statement does to ``__all__``, as a facts record (nothing resolved).

Static forms become ``{"op": "set" | "add", "items": [...], "span": ordinal | null, "line": n}``
where each item is ``{"name": "X"}``, ``{"ref": "a.b"}`` (the ``__all__`` of whatever ``a.b``
names in this module, as in ``__all__ = a.__all__ + ["X"]``) or ``{"var": "x"}`` (the value of a
variable: ``__all__`` itself, another module's ``__all__`` imported under an alias as Django does
with ``from .fields import __all__ as fields_all``, or a list literal assigned to it). ``set`` is
``__all__ = ...`` (plain or annotated); ``add`` is ``+=``, ``.extend(...)`` and ``.append("X")``.
A statement built from anything else (a comprehension, a call, a non-string element) becomes
``{"op": ..., "dynamic": true, "line": n, "text": "..."}`` as a whole — no partial guesses, which
is also how griffe reads it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kb_assets.core.models import JSON
from kb_assets.core.symbols.values import dotted_name, literal_value, unwrap

if TYPE_CHECKING:
    from tree_sitter import Node

    from kb_assets.core.spans import ParsedSource

ALL = "__all__"
_SEQUENCES = frozenset({"list", "tuple", "set", "expression_list"})
_TEXT_CHARS = 120


def all_operation(source: ParsedSource, statement: Node, span: int | None) -> JSON | None:
    """The ``__all__`` record of one expression statement, or None if it leaves ``__all__`` alone."""
    expr = statement.named_child(0) if statement.named_child_count else None
    if expr is None:
        return None
    if expr.type == "assignment" and _is_all(source, expr.child_by_field_name("left")):
        right = expr.child_by_field_name("right")
        if right is None:
            return None  # ``__all__: list[str]`` binds nothing
        return _record(source, statement, "set", _items(source, right), span)
    if expr.type == "augmented_assignment" and _is_all(source, expr.child_by_field_name("left")):
        op = expr.child_by_field_name("operator")
        items = (
            _items(source, expr.child_by_field_name("right")) if op is not None and op.type == "+=" else None
        )
        return _record(source, statement, "add", items, span)
    if expr.type == "call":
        return _method_call(source, statement, expr)
    return None


def _method_call(source: ParsedSource, statement: Node, call: Node) -> JSON | None:
    """``__all__.extend([...])``, ``__all__.append("x")``; any other method makes it dynamic."""
    function = call.child_by_field_name("function")
    if (
        function is None
        or function.type != "attribute"
        or not _is_all(source, function.child_by_field_name("object"))
    ):
        return None
    method = function.child_by_field_name("attribute")
    arguments = call.child_by_field_name("arguments")
    args = [a for a in arguments.named_children if a.type != "comment"] if arguments is not None else []
    items: list[JSON] | None = None
    if method is not None and len(args) == 1 and args[0].type != "keyword_argument":
        name = source.text(method)
        if name == "extend":
            items = _items(source, args[0])
        elif name == "append":
            value = _string(source, args[0])
            items = [{"name": value}] if value is not None else None
    return _record(source, statement, "add", items, None)


def _record(
    source: ParsedSource, statement: Node, op: str, items: list[JSON] | None, span: int | None
) -> JSON:
    if items is None:
        text = source.text(statement).split("\n", 1)[0][:_TEXT_CHARS]
        return {"op": op, "dynamic": True, "line": statement.start_point[0] + 1, "text": text}
    return {"op": op, "items": items, "span": span, "line": statement.start_point[0] + 1}


def _items(source: ParsedSource, node: Node | None) -> list[JSON] | None:
    """The entries of a static ``__all__`` expression, in order; None when it is not static."""
    node = unwrap(node)
    if node is None:
        return None
    if node.type in _SEQUENCES:
        return _sequence(source, node)
    if node.type == "binary_operator":
        op = node.child_by_field_name("operator")
        left = _items(source, node.child_by_field_name("left"))
        right = _items(source, node.child_by_field_name("right"))
        if op is None or op.type != "+" or left is None or right is None:
            return None
        return left + right
    if node.type == "identifier":
        return [{"var": source.text(node)}]
    ref = _all_ref(source, node)
    return [{"ref": ref}] if ref is not None else None


def _sequence(source: ParsedSource, node: Node) -> list[JSON] | None:
    """The entries of a list/tuple/set display; None if any element is not static."""
    out: list[JSON] = []
    for element in node.named_children:
        if element.type == "comment":
            continue
        part = _element(source, element)
        if part is None:
            return None
        out.extend(part)
    return out


def _element(source: ParsedSource, element: Node) -> list[JSON] | None:
    """One element of a sequence: a string, ``*a.__all__``, or (tree-sitter's reading of it)
    an attribute whose object is a splat."""
    value = _string(source, element)
    if value is not None:
        return [{"name": value}]
    if element.type == "list_splat":
        return _items(source, element.named_child(0) if element.named_child_count else None)
    if element.type == "attribute":
        obj = element.child_by_field_name("object")
        attr = element.child_by_field_name("attribute")
        if obj is not None and obj.type == "list_splat" and attr is not None and source.text(attr) == ALL:
            inner = dotted_name(source, obj.named_child(0) if obj.named_child_count else None)
            return [{"ref": inner}] if inner is not None else None
    return None


def _all_ref(source: ParsedSource, node: Node) -> str | None:
    """``a.b`` for the expression ``a.b.__all__``."""
    dotted = dotted_name(source, node)
    if dotted is None or not dotted.endswith(f".{ALL}"):
        return None
    return dotted[: -len(ALL) - 1]


def _string(source: ParsedSource, node: Node) -> str | None:
    if node.type not in ("string", "concatenated_string"):
        return None
    value = literal_value(source, node)
    return value[0] if value is not None and isinstance(value[0], str) else None


def _is_all(source: ParsedSource, node: Node | None) -> bool:
    return node is not None and node.type == "identifier" and source.text(node) == ALL
