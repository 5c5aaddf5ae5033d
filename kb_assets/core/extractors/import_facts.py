"""File-local import facts, cached per blob: what each import statement names, nothing resolved.

Each statement becomes grimp's "imported objects" (``import a.b`` → ``a.b``; ``from ..m import x``
→ ``..m.x``; ``from . import *`` → ``.*``) so that resolution can follow grimp's semantics exactly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kb_assets.core.models import JSON, SpanKind
from kb_assets.core.treesitter import captures, query

if TYPE_CHECKING:
    from tree_sitter import Node

    from kb_assets.core.spans import ParsedSource

_NAME_TYPES = {"dotted_name", "aliased_import"}


def collect_imports(source: ParsedSource) -> JSON:
    """Every import statement (by span ordinal) with its imported objects, plus dynamic imports."""
    statements: list[JSON] = []
    for ordinal, span in enumerate(source.spans):
        if span.kind is not SpanKind.IMPORT:
            continue
        node = source.span_nodes[ordinal]
        objects = _imported_objects(source, node)
        if objects:
            statements.append(
                {
                    "span": ordinal,
                    "objects": objects,
                    "type_checking": _under_type_checking(source, node),
                    "in_function": _in_function(node),
                }
            )
    return {"statements": statements, "dynamic": _dynamic_imports(source)}


def _dotted(source: ParsedSource, node: Node) -> str:
    """The dotted name of a ``dotted_name`` or the imported name of an ``aliased_import``."""
    if node.type == "aliased_import":
        name = node.child_by_field_name("name")
        return _dotted(source, name) if name is not None else ""
    return ".".join(source.text(c) for c in node.named_children if c.type == "identifier")


def _from_module(source: ParsedSource, node: Node) -> str | None:
    """``..m`` for ``from ..m import x``; ``.`` prefix only for ``from . import x``."""
    module = node.child_by_field_name("module_name")
    if module is None:
        return "__future__" if node.type == "future_import_statement" else None
    if module.type == "relative_import":
        dots = sum(source.text(c).count(".") for c in module.children if c.type == "import_prefix")
        rest = next((c for c in module.named_children if c.type == "dotted_name"), None)
        return "." * dots + (_dotted(source, rest) if rest is not None else "")
    return _dotted(source, module)


def _imported_objects(source: ParsedSource, node: Node) -> list[str]:
    """grimp's imported-object names for one statement, in source order."""
    names = [c for c in node.children_by_field_name("name") if c.type in _NAME_TYPES]
    if node.type == "import_statement":
        return [_dotted(source, c) for c in names]
    module = _from_module(source, node)
    if module is None:
        return []
    sep = "" if module.endswith(".") else "."
    if any(c.type == "wildcard_import" for c in node.named_children):
        return [f"{module}{sep}*"]
    return [f"{module}{sep}{_dotted(source, c)}" for c in names]


def _under_type_checking(source: ParsedSource, node: Node) -> bool:
    """True inside the body of ``if TYPE_CHECKING:`` / ``if typing.TYPE_CHECKING:``."""
    child, parent = node, node.parent
    while parent is not None:
        if parent.type == "if_statement" and parent.child_by_field_name("consequence") == child:
            cond = parent.child_by_field_name("condition")
            if cond is not None and source.text(cond).rsplit(".", 1)[-1] == "TYPE_CHECKING":
                return True
        child, parent = parent, parent.parent
    return False


def _in_function(node: Node) -> bool:
    """True when the statement runs only when a function is called."""
    parent = node.parent
    while parent is not None:
        if parent.type in ("function_definition", "lambda"):
            return True
        parent = parent.parent
    return False


def _dynamic_imports(source: ParsedSource) -> list[JSON]:
    """Calls that import by computed name, with their line and source text."""
    found: list[JSON] = []
    if b"import_module" not in source.source and b"__import__" not in source.source:
        return found  # the query's text predicate is evaluated per call node: skip files that cannot match
    for node in captures(query("dynamic_imports"), source.root).get("call.dynamic_import", []):
        text = source.text(node)
        found.append({"line": node.start_point[0] + 1, "text": text[:200]})
    found.sort(key=lambda d: (d["line"], d["text"]))
    return found
