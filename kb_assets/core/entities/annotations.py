"""Reading annotations as written: ``ClassVar[...]``, ``InitVar[...]``, ``Mapped[...]`` and string forms.

Annotations come as ``symbols`` value summaries (``values.summarize``). A string annotation or
forward reference (``"Mapped[list['Address']]"``) is parsed here with ``ast`` into the same summary
shape, so every predicate and the reference walk see one form. Predicates look at the written
head only (``typing.ClassVar`` and ``ClassVar`` alike), as ``dataclasses`` and SQLAlchemy do for
strings.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from functools import lru_cache

from kb_assets.core.models import JSON

Summary = Mapping[str, JSON]

MAX_STRING = 300
"""Longest string annotation parsed (longer ones are left unread)."""


def parse_string(text: str) -> Summary | None:
    """The summary of a string annotation, or None when it is not a type expression."""
    if not text or len(text) > MAX_STRING:
        return None
    return _parse(text.strip())


@lru_cache(maxsize=4096)
def _parse(text: str) -> Summary | None:
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return _summary(tree.body, 0)


def _summary(node: ast.expr, depth: int) -> Summary | None:
    """The ``values.summarize`` shape of a parsed expression (None for anything else)."""
    dotted = _dotted(node)
    if depth > 6:
        return None
    if dotted is not None:
        return {"kind": "name", "dotted": dotted}
    if isinstance(node, ast.Subscript):
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        index = [_summary(i, depth + 1) or {"kind": "other"} for i in items]
        return {"kind": "subscript", "dotted": _dotted(node.value), "index": index}
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        sides = [_summary(node.left, depth + 1), _summary(node.right, depth + 1)]
        flat = [i for s in sides if s is not None for i in (s["items"] if s["kind"] == "union" else [s])]
        return {"kind": "union", "items": flat}
    if isinstance(node, ast.Constant) and isinstance(node.value, str | int | bool | type(None)):
        return {"kind": "literal", "value": node.value}
    return None


def _dotted(node: ast.expr) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def readable(summary: Summary | None) -> Summary | None:
    """The summary with a top-level string annotation parsed (``"ClassVar[int]"``)."""
    if summary is not None and summary.get("kind") == "literal" and isinstance(summary.get("value"), str):
        return parse_string(str(summary["value"]))
    return summary


def head(summary: Summary | None) -> str | None:
    """The last segment of the annotation's head: ``ClassVar`` for ``typing.ClassVar[int]``."""
    summary = readable(summary)
    if summary is None or summary.get("kind") not in ("name", "subscript"):
        return None
    dotted = summary.get("dotted")
    return dotted.rsplit(".", 1)[-1] if isinstance(dotted, str) else None


def is_classvar(summary: Summary | None) -> bool:
    """``ClassVar`` / ``ClassVar[...]`` in any spelling."""
    return head(summary) == "ClassVar"


def is_initvar(summary: Summary | None) -> bool:
    """``dataclasses.InitVar[...]``: an ``__init__`` argument, not a field."""
    return head(summary) == "InitVar"


def is_kw_only_marker(summary: Summary | None) -> bool:
    """``_: KW_ONLY``: the dataclass keyword-only sentinel, not a field."""
    return head(summary) == "KW_ONLY"


def is_final(summary: Summary | None) -> bool:
    """``Final`` / ``Final[...]`` (pydantic treats it as a class variable when it has a value)."""
    return head(summary) == "Final"


def is_mapped(summary: Summary | None) -> bool:
    """``Mapped[...]`` / ``WriteOnlyMapped[...]`` / ``DynamicMapped[...]``: a SQLAlchemy attribute."""
    return head(summary) in ("Mapped", "WriteOnlyMapped", "DynamicMapped")


def names(summary: Summary | None, depth: int = 0) -> set[str]:
    """Every dotted name an annotation mentions (string forward references parsed)."""
    summary = readable(summary)
    if summary is None or depth > 8:
        return set()
    found: set[str] = set()
    dotted = summary.get("dotted")
    if summary.get("kind") in ("name", "subscript") and isinstance(dotted, str):
        found.add(dotted)
    for key in ("index", "items"):
        items = summary.get(key)
        for item in items if isinstance(items, list) else []:
            if isinstance(item, Mapping):
                found |= names(item, depth + 1)
    return found
