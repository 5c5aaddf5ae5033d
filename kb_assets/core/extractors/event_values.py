"""How ``event_facts`` writes down a registration's arguments and decorator names.

An argument is kept as written, with just enough to resolve it later and nothing that depends on
where it sits: ``{"name": "a.b"}`` for a name or attribute chain, ``{"str": "s"}`` for a string
literal, ``{"lambda": true}``, ``{"list": [A...]}`` for a list or tuple (one level), else
``{"text": "..."}`` (its first line, shortened) so a gap can quote it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kb_assets.core.models import JSON
from kb_assets.core.symbols.values import MAX_ITEMS, dotted_name, literal_value, unwrap

if TYPE_CHECKING:
    from tree_sitter import Node

    from kb_assets.core.spans import ParsedSource

_TEXT_CHARS = 80


def argument(source: ParsedSource, node: Node | None, depth: int = 0) -> JSON:
    """One argument as written (see the module docstring)."""
    node = unwrap(node)
    if node is None:
        return {"text": ""}
    dotted = dotted_name(source, node)
    if dotted is not None:
        return {"name": dotted}
    if node.type == "lambda":
        return {"lambda": True}
    if node.type in ("string", "concatenated_string"):
        value = literal_value(source, node)
        if value is not None and isinstance(value[0], str):
            return {"str": value[0]}
    if node.type in ("list", "tuple") and depth == 0:
        items = [c for c in node.named_children if c.type != "comment"][:MAX_ITEMS]
        return {"list": [argument(source, c, depth + 1) for c in items]}
    return {"text": source.text(node).split("\n", 1)[0][:_TEXT_CHARS]}


def last_name(source: ParsedSource, node: Node | None) -> str | None:
    """``on_event`` for the decorator ``app.on_event("startup")`` (the callee's last segment)."""
    node = unwrap(node)
    if node is not None and node.type == "call":
        node = unwrap(node.child_by_field_name("function"))
    dotted = dotted_name(source, node)
    return dotted.rsplit(".", 1)[-1] if dotted is not None else None
