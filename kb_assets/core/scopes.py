"""Names and nesting inside one file: what a span is called and which scope holds a node.

``span_name`` decides a mark's kind and ``fq_symbol_path`` (``Order.total``, ``outer.inner``,
``Order.<import:os>``, ``a,b``); ``ScopeIndex`` answers "which span / which def body contains this
node" by bisection over the nested byte ranges, without walking parents (``Node.parent`` costs
a walk from the root each time).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from tree_sitter import Node

from kb_assets.core import treesitter as ts
from kb_assets.core.models import Span, SpanKind

_CLASS, _FUNCTION = ts.kind_ids("class_definition"), ts.kind_ids("function_definition")
_DECORATED = ts.kind_ids("decorated_definition")
_IMPORTS = ts.kind_ids("import_statement", "import_from_statement")
_FUTURE = ts.kind_ids("future_import_statement")
_ASSIGN, _AUGMENTED = ts.kind_ids("assignment"), ts.kind_ids("augmented_assignment")
_IDENTIFIER, _ALIASED = ts.kind_ids("identifier"), ts.kind_ids("aliased_import")
_SPLAT = ts.kind_ids("list_splat_pattern", "list_splat")
_SEQUENCES = ts.kind_ids(
    "pattern_list",
    "tuple_pattern",
    "list_pattern",
    "tuple",
    "list",
    "expression_list",
    "parenthesized_expression",
)
_SCOPE_KINDS = (SpanKind.MODULE, SpanKind.CLASS, SpanKind.FUNCTION)
_NAME_FIELD = ts.PYTHON.field_id_for_name("name") or 0
_DEFINITION_FIELD = ts.PYTHON.field_id_for_name("definition") or 0


def span_name(node: Node, source: bytes, scope: str) -> tuple[SpanKind, str] | None:
    """Kind and fq_symbol_path of a marked node inside ``scope`` (None: not a span after all)."""
    kid = node.kind_id
    if kid in _DECORATED:
        definition = node.child_by_field_id(_DEFINITION_FIELD)
        if definition is None:
            return None
        node, kid = definition, definition.kind_id
    prefix = f"{scope}." if scope else ""
    if kid in _CLASS or kid in _FUNCTION:
        name = node.child_by_field_id(_NAME_FIELD)
        kind = SpanKind.CLASS if kid in _CLASS else SpanKind.FUNCTION
        return (kind, prefix + _text(name, source)) if name is not None else None
    if kid in _IMPORTS or kid in _FUTURE:
        return SpanKind.IMPORT, f"{prefix}<import:{_import_targets(node, source)}>"
    targets = _assignment_targets(node, source)
    return (SpanKind.ASSIGNMENT, ",".join(targets)) if targets else None


def _text(node: Node, source: bytes) -> str:
    return source[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _dotted(node: Node, source: bytes) -> str:
    """``a.b`` for a dotted_name (spacing inside it ignored), or the name of an aliased import."""
    if node.kind_id in _ALIASED:
        name = node.child_by_field_name("name")
        node = name if name is not None else node
    return ".".join(_text(c, source) for c in node.named_children if c.kind_id in _IDENTIFIER)


def _import_targets(node: Node, source: bytes) -> str:
    """``a.b,c`` for ``import a.b, c``; ``..m`` for ``from ..m import x``; ``.`` for ``from . import x``."""
    if node.kind_id in _FUTURE:
        return "__future__"
    module = node.child_by_field_name("module_name")
    if module is None:
        return ",".join(_dotted(c, source) for c in node.children_by_field_name("name"))
    if module.kind_id in _IDENTIFIER or module.type == "dotted_name":
        return _dotted(module, source)
    dots = "".join("." * _text(c, source).count(".") for c in module.children if c.type == "import_prefix")
    rest = [_dotted(c, source) for c in module.named_children if c.type == "dotted_name"]
    return dots + "".join(rest)


def _assignment_targets(statement: Node, source: bytes) -> list[str] | None:
    """Names bound by ``a = b = 1``, ``a, (b, *c) = ...``, ``x: int = 1``, ``__all__ += [...]``."""
    if not statement.named_child_count:
        return None
    expr: Node | None = statement.named_child(0)
    names: list[str] = []
    while expr is not None and (expr.kind_id in _ASSIGN or expr.kind_id in _AUGMENTED):
        left = expr.child_by_field_name("left")
        if left is None or not _collect_names(left, source, names):
            return None
        if expr.kind_id in _AUGMENTED:
            break
        expr = expr.child_by_field_name("right")
    return names or None


def _collect_names(target: Node, source: bytes, out: list[str]) -> bool:
    """Append the identifiers of a target made only of names, tuples/lists and stars."""
    stack = [target]
    while stack:
        node = stack.pop()
        if node.kind_id in _IDENTIFIER:
            out.append(_text(node, source))
        elif node.kind_id in _SEQUENCES or node.kind_id in _SPLAT:
            stack.extend(reversed([c for c in node.named_children if not c.is_extra]))
        else:
            return False
    return True


@dataclass(frozen=True, slots=True)
class ScopeIndex:
    """Nested byte ranges of the scope spans and of def/class bodies, for bisection lookups."""

    starts: tuple[int, ...]
    ends: tuple[int, ...]
    parents: tuple[int, ...]
    ordinals: tuple[int, ...]
    body_starts: tuple[int, ...]
    body_ends: tuple[int, ...]
    body_parents: tuple[int, ...]
    body_paths: tuple[str, ...]

    @classmethod
    def build(cls, spans: Sequence[Span], nodes: Sequence[Node], size: int) -> ScopeIndex:
        """Index the module/class/function spans of one parsed file (``size``: source bytes)."""
        ranges: list[tuple[int, int, int]] = []
        bodies: list[tuple[int, int, str]] = []
        for ordinal, (span, node) in enumerate(zip(spans, nodes, strict=True)):
            if span.kind not in _SCOPE_KINDS:
                continue
            if span.kind is SpanKind.MODULE:
                ranges.append((0, size, ordinal))
                continue
            ranges.append((node.start_byte, node.end_byte, ordinal))
            definition = node.child_by_field_name("definition") if node.kind_id in _DECORATED else node
            body = definition.child_by_field_name("body") if definition is not None else None
            if body is not None:
                bodies.append((body.start_byte, body.end_byte, span.fq_symbol_path))
        return cls(
            tuple(r[0] for r in ranges),
            tuple(r[1] for r in ranges),
            _parents(ranges),
            tuple(r[2] for r in ranges),
            tuple(b[0] for b in bodies),
            tuple(b[1] for b in bodies),
            _parents(bodies),
            tuple(b[2] for b in bodies),
        )

    def innermost_span(self, start: int, end: int) -> int:
        """Ordinal of the innermost scope span containing ``[start, end)`` (the module at worst)."""
        i = _innermost(self.starts, self.ends, self.parents, start, end)
        return self.ordinals[i] if i >= 0 else 0

    def scope_path(self, start: int, end: int) -> str:
        """fq path of the innermost def/class body containing ``[start, end)``, "" for none."""
        i = _innermost(self.body_starts, self.body_ends, self.body_parents, start, end)
        return self.body_paths[i] if i >= 0 else ""


def _parents(ranges: Sequence[tuple[int, int, object]]) -> tuple[int, ...]:
    """Index of each range's innermost enclosing range (-1 for none); ranges are in pre-order."""
    parents: list[int] = []
    open_: list[int] = []
    for i, (start, _end, _) in enumerate(ranges):
        while open_ and ranges[open_[-1]][1] <= start:
            open_.pop()
        parents.append(open_[-1] if open_ else -1)
        open_.append(i)
    return tuple(parents)


def _innermost(
    starts: Sequence[int], ends: Sequence[int], parents: Sequence[int], start: int, end: int
) -> int:
    i = bisect_right(starts, start) - 1
    while i >= 0 and ends[i] < end:
        i = parents[i]
    return i
