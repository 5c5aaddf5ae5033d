"""Expression strings: the tiny, file-local language the call-graph facts use for callees and values.

An expression string is a chain of segments joined by ``.``; a segment is a name followed by zero or
more ``()`` (a call of what precedes, arguments dropped): ``helper``, ``a.b.c``, ``self.repo.save``,
``super().save``, ``Foo().run``, ``make()()``. Anything else (subscripts, literals, operators,
lambdas, ``await``) has no expression string: it is not statically a name, so resolution never
guesses about it. Type strings (``type_text``) are the dotted class an annotation names, with
``Optional``/``Annotated``/``X | None`` wrappers removed.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

from kb_assets.core import treesitter as ts

if TYPE_CHECKING:
    from tree_sitter import Node

    from kb_assets.core.spans import ParsedSource

MAX_SEGMENTS = 12
"""Longest chain kept; deeper expressions are not statically interesting."""

_IDENTIFIER = ts.kind_ids("identifier")
_ATTRIBUTE, _CALL = ts.kind_ids("attribute"), ts.kind_ids("call")
_PAREN = ts.kind_ids("parenthesized_expression")
_OBJECT = ts.PYTHON.field_id_for_name("object") or 0
_ATTR = ts.PYTHON.field_id_for_name("attribute") or 0
_FUNCTION = ts.PYTHON.field_id_for_name("function") or 0
_DOTTED = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_WRAPPERS = frozenset({"Optional", "Annotated", "ClassVar", "Final", "Required", "NotRequired", "ReadOnly"})


def expr_text(source: ParsedSource, node: Node | None, depth: int = 0) -> str | None:
    """The expression string of ``node`` (see the module docstring), or None."""
    if node is None or depth > MAX_SEGMENTS:
        return None
    kid = node.kind_id
    if kid in _IDENTIFIER:
        return source.text(node)
    if kid in _ATTRIBUTE:
        attr = node.child_by_field_id(_ATTR)
        base = expr_text(source, node.child_by_field_id(_OBJECT), depth + 1)
        return f"{base}.{source.text(attr)}" if base is not None and attr is not None else None
    if kid in _CALL:
        base = expr_text(source, node.child_by_field_id(_FUNCTION), depth + 1)
        return f"{base}()" if base is not None else None
    if kid in _PAREN and node.named_child_count == 1:
        return expr_text(source, node.named_child(0), depth + 1)
    return None


def callee_text(source: ParsedSource, function: Node | None) -> str | None:
    """The expression string of a call's ``function`` child, with a fast path for plain names."""
    if function is None:
        return None
    kid = function.kind_id
    if kid in _IDENTIFIER or kid in _ATTRIBUTE:
        raw = source.source[function.start_byte : function.end_byte]
        if _DOTTED.fullmatch(raw) is not None:
            return raw.decode("ascii")
        if kid in _IDENTIFIER:
            return raw.decode("utf-8", "replace")
    return expr_text(source, function)


def type_text(source: ParsedSource, node: Node | None, depth: int = 0) -> str | None:
    """The dotted class an annotation names (``Optional[X]``, ``X | None``, ``"X"`` → ``X``)."""
    if node is None or depth > 4:
        return None
    if node.type == "type" and node.named_child_count == 1:
        return type_text(source, node.named_child(0), depth + 1)
    if node.type in ("identifier", "attribute"):
        text = source.text(node)
        return text if all(p.isidentifier() for p in text.split(".")) else None
    if node.type == "string":
        inner = source.text(node).strip("'\"")
        return inner if inner and all(p.isidentifier() for p in inner.split(".")) else None
    if node.type == "binary_operator":
        sides = [node.child_by_field_name("left"), node.child_by_field_name("right")]
        kept = [s for s in sides if s is not None and s.type != "none"]
        return type_text(source, kept[0], depth + 1) if len(kept) == 1 else None
    return _generic(source, node, depth)


def _generic(source: ParsedSource, node: Node, depth: int) -> str | None:
    """``Optional[X]``/``Annotated[X, ...]``/``Union[X, None]`` → X; ``Repo[T]`` → Repo."""
    if node.type == "generic_type":
        head = node.named_child(0) if node.named_child_count else None
        params = next((c for c in node.named_children if c.type == "type_parameter"), None)
        items = [c for c in params.named_children if c.type != "comment"] if params is not None else []
    elif node.type == "subscript":
        head = node.child_by_field_name("value")
        items = node.children_by_field_name("subscript")
    else:
        return None
    name = type_text(source, head, depth + 1)
    if name is None:
        return None
    last = name.rsplit(".", 1)[-1]
    if last in _WRAPPERS:
        return type_text(source, items[0], depth + 1) if items else None
    if last == "Union":
        kept = [i for i in items if source.text(i) != "None"]
        return type_text(source, kept[0], depth + 1) if len(kept) == 1 else None
    return name


@functools.lru_cache(maxsize=1 << 16)
def segments(expr: str) -> tuple[tuple[str, int], ...]:
    """``a.b()().c`` → ``(("a", 0), ("b", 2), ("c", 0))``: each name with how often it is called
    (cached: the same few thousand expressions recur across a code base)."""
    out: list[tuple[str, int]] = []
    for part in expr.split("."):
        name = part.rstrip("()")
        out.append((name, (len(part) - len(name)) // 2))
    return tuple(out)
