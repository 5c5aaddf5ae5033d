"""Binding records of import statements (see ``collect`` for the record layout).

``import a.b`` binds ``a`` and remembers that it loaded ``a.b``; ``import a.b as c`` binds ``c`` to
``a.b``; ``from ..m import x as y`` binds ``y`` to attribute ``x`` of the module written ``..m``
(resolved later, against the importing module); ``from m import *`` is one ``star`` record.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kb_assets.core.models import JSON

if TYPE_CHECKING:
    from tree_sitter import Node

    from kb_assets.core.spans import ParsedSource


def import_bindings(source: ParsedSource, stmt: Node, span: int) -> list[JSON]:
    """``import a.b [as c]`` and ``from m import x [as y] | *`` as binding records."""
    if stmt.type == "import_statement":
        return [_plain_import(source, name, span) for name in stmt.children_by_field_name("name")]
    module = from_module(source, stmt)
    if any(c.type == "wildcard_import" for c in stmt.named_children):
        return [{"name": "*", "kind": "star", "span": span, "module": module}]
    out: list[JSON] = []
    for name in stmt.children_by_field_name("name"):
        dotted = name.child_by_field_name("name") if name.type == "aliased_import" else name
        alias = name.child_by_field_name("alias") if name.type == "aliased_import" else None
        if dotted is None:
            continue
        attr = _dots(source, dotted)
        record = {"name": attr, "kind": "from", "span": span, "module": module, "attr": attr}
        if alias is not None:
            record |= {"name": source.text(alias), "aliased": True}
        out.append(record)
    return out


def _plain_import(source: ParsedSource, name: Node, span: int) -> JSON:
    """``import a.b`` binds ``a`` (``imported``: ``a.b``); ``import a.b as c`` binds ``c`` to ``a.b``."""
    dotted = name.child_by_field_name("name") if name.type == "aliased_import" else name
    alias = name.child_by_field_name("alias") if name.type == "aliased_import" else None
    full = _dots(source, dotted) if dotted is not None else ""
    if alias is not None:
        return {"name": source.text(alias), "kind": "import", "span": span, "module": full, "aliased": True}
    top = full.split(".", 1)[0]
    return {"name": top, "kind": "import", "span": span, "module": top, "imported": full}


def from_module(source: ParsedSource, stmt: Node) -> str:
    """``..m`` for ``from ..m import x``, ``.`` for ``from . import x``, ``m`` for ``from m import x``."""
    module = stmt.child_by_field_name("module_name")
    if module is None:
        return ""
    if module.type != "relative_import":
        return _dots(source, module)
    dots = sum(source.text(c).count(".") for c in module.children if c.type == "import_prefix")
    rest = next((c for c in module.named_children if c.type == "dotted_name"), None)
    return "." * dots + (_dots(source, rest) if rest is not None else "")


def _dots(source: ParsedSource, node: Node) -> str:
    return ".".join(source.text(c) for c in node.named_children if c.type == "identifier")
