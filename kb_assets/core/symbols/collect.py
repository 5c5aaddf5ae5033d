"""The ``symbols`` collector: what each module and each class body binds, in source order.

Facts of one blob (JSON, spans by ordinal, nothing resolved; relative imports keep their dots)::

    {"bindings": [B...],   # module level, source order (later wins, as in Python)
     "classes":  [C...],   # every class not inside a function, pre-order
     "all":      [A...]}   # __all__ operations, source order (see ``dunder_all``)

    B = {"name", "kind": "class" | "function" | "assign" | "import" | "from" | "star", "span", ...}
        class:    "qualname"
        function: "qualname", "decorators": [V...], "async": true
        assign:   "value": V | null (bare annotation), "annotation": V
        import:   "module": "a.b"   (``import a.b`` binds ``a``: "a", with "imported": "a.b";
                                     ``import a.b as c`` binds ``c``: "a.b")
        from:     "module": "..m" | "." | "m", "attr": "x"   (``from ..m import x as name``)
        import/from: "aliased": true when written with ``as``
        star:     "module"          (name is "*")
        and "type_checking": true under ``if TYPE_CHECKING:``
    C = {"qualname", "span", "bases": [V...], "keywords": {"metaclass": V}, "decorators": [V...],
         "bindings": [B...]}   # class-level bindings; an assignment's span is the class's span

``V`` is a ``values.summarize`` summary. Optional keys (``decorators``, ``keywords``, ``async``,
``annotation``, ``aliased``, ``imported``, ``type_checking``) are left out when empty or false, to
keep the per-blob cache small. Statements nested in ``if``/``elif``/``else``, ``try``/
``except``/``finally``, ``with``, ``for``/``while`` and ``match`` at the same level count (every
branch, in source order); anything inside a function body does not.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from kb_assets.core.models import JSON
from kb_assets.core.symbols.dunder_all import all_operation
from kb_assets.core.symbols.import_bindings import import_bindings
from kb_assets.core.symbols.values import summarize

if TYPE_CHECKING:
    from tree_sitter import Node

    from kb_assets.core.spans import ParsedSource

COLLECTOR_ID = "symbols"

_DEFINITIONS = frozenset({"function_definition", "class_definition", "decorated_definition"})
_IMPORTS = frozenset({"import_statement", "import_from_statement"})
_NESTED = frozenset(
    {
        "block",
        "else_clause",
        "elif_clause",
        "try_statement",
        "except_clause",
        "except_group_clause",
        "finally_clause",
        "with_statement",
        "for_statement",
        "while_statement",
        "match_statement",
        "case_clause",
    }
)
_TARGETS = frozenset({"pattern_list", "tuple_pattern", "list_pattern", "tuple", "list", "expression_list"})


class SymbolsCollector:
    """Facts-only collector shared by every extractor that needs to know what a name means."""

    collector_id = COLLECTOR_ID
    facts_version = "2"  # 2: long unions and subscripts kept whole (values.MAX_INDEX_ITEMS)

    def collect(self, source: ParsedSource) -> JSON:
        """Module and class-body bindings plus ``__all__`` operations of one blob."""
        walk = _Walk(source)
        bindings = walk.body(source.root, "", None, module_level=True)
        return {"bindings": bindings, "classes": walk.classes, "all": walk.all_ops}


class _Walk:
    """One pass over a file's module and class bodies."""

    def __init__(self, source: ParsedSource) -> None:
        self.src = source
        self.ordinals = {(n.start_byte, n.end_byte): i for i, n in enumerate(source.span_nodes)}
        self.classes: list[JSON] = []
        self.all_ops: list[JSON] = []

    def span(self, node: Node) -> int:
        """The ordinal of the span marked at ``node`` (else the innermost enclosing one)."""
        found = self.ordinals.get((node.start_byte, node.end_byte))
        return found if found is not None else self.src.innermost_span(node)

    def body(self, container: Node, scope: str, class_span: int | None, *, module_level: bool) -> list[JSON]:
        """Bindings of a module or class body, in source order."""
        out: list[JSON] = []
        for stmt, type_checking in statements(self.src, container, type_checking=False):
            records = self.statement(stmt, scope, class_span, module_level=module_level)
            for record in records:
                if type_checking:
                    record["type_checking"] = True
            out.extend(records)
        return out

    def statement(self, stmt: Node, scope: str, class_span: int | None, *, module_level: bool) -> list[JSON]:
        """The binding records of one simple or definition statement."""
        if stmt.type in _DEFINITIONS:
            return self.definition(stmt, scope)
        if stmt.type in _IMPORTS:
            return import_bindings(self.src, stmt, self.span(stmt))
        expr = stmt.named_child(0) if stmt.named_child_count else None
        span = self.span(stmt) if class_span is None else class_span
        if module_level:
            op = all_operation(self.src, stmt, span)
            if op is not None:
                self.all_ops.append(op)
        if expr is None or expr.type != "assignment":
            return []
        return assignment_bindings(self.src, expr, span)

    def definition(self, stmt: Node, scope: str) -> list[JSON]:
        """A function or class (decorated or not); classes are walked into."""
        node = stmt.child_by_field_name("definition") if stmt.type == "decorated_definition" else stmt
        name_node = node.child_by_field_name("name") if node is not None else None
        if node is None or name_node is None:
            return []
        name = self.src.text(name_node)
        qualname = f"{scope}.{name}" if scope else name
        span = self.span(stmt)
        decorators = [
            summarize(self.src, d.named_child(0) if d.named_child_count else None)
            for d in stmt.named_children
            if d.type == "decorator"
        ]
        if node.type == "function_definition":
            record = {"name": name, "kind": "function", "span": span, "qualname": qualname}
            if any(c.type == "async" for c in node.children):
                record["async"] = True
            return [record | ({"decorators": decorators} if decorators else {})]
        record = {"qualname": qualname, "span": span} | ({"decorators": decorators} if decorators else {})
        record |= self.superclasses(node)
        self.classes.append(record)
        body = node.child_by_field_name("body")
        record["bindings"] = self.body(body, qualname, span, module_level=False) if body is not None else []
        return [{"name": name, "kind": "class", "span": span, "qualname": qualname}]

    def superclasses(self, node: Node) -> dict[str, JSON]:
        """Bases (positional) and keywords (``metaclass=``) of a class statement."""
        bases: list[JSON] = []
        keywords: dict[str, JSON] = {}
        arguments = node.child_by_field_name("superclasses")
        for arg in arguments.named_children if arguments is not None else []:
            if arg.type == "keyword_argument":
                key, value = arg.child_by_field_name("name"), arg.child_by_field_name("value")
                if key is not None:
                    keywords[self.src.text(key)] = summarize(self.src, value)
            elif arg.type != "comment":
                bases.append(summarize(self.src, arg))
        return {"bases": bases} | ({"keywords": keywords} if keywords else {})


def statements(source: ParsedSource, container: Node, *, type_checking: bool) -> Iterator[tuple[Node, bool]]:
    """Simple and definition statements at this level, through compound statements' bodies."""
    for child in container.named_children:
        if child.type == "if_statement":
            cond = child.child_by_field_name("condition")
            guarded = cond is not None and source.text(cond).rsplit(".", 1)[-1].strip() == "TYPE_CHECKING"
            for part in child.named_children:
                if part.type == "block":
                    yield from statements(source, part, type_checking=type_checking or guarded)
                elif part.type in _NESTED:
                    yield from statements(source, part, type_checking=type_checking)
        elif child.type in _NESTED:
            yield from statements(source, child, type_checking=type_checking)
        elif child.type in _DEFINITIONS or child.type in _IMPORTS or child.type == "expression_statement":
            yield child, type_checking


def assignment_bindings(source: ParsedSource, expr: Node, span: int) -> list[JSON]:
    """``a = b = v``, ``a, b = v``, ``x: T = v`` and ``x: T`` as binding records."""
    targets: list[tuple[Node, bool]] = []
    node: Node | None = expr
    while node is not None and node.type == "assignment":
        left = node.child_by_field_name("left")
        if left is not None:
            targets.append((left, left.type in _TARGETS))
        node = node.child_by_field_name("right")
    annotation = expr.child_by_field_name("type")
    value = summarize(source, node) if node is not None else None
    ann = summarize(source, annotation) if annotation is not None else None
    out: list[JSON] = []
    for target, unpacked in targets:
        for ident in _identifiers(target):
            bound = {"kind": "other"} if unpacked and value is not None else value
            record = {"name": source.text(ident), "kind": "assign", "span": span, "value": bound}
            out.append(record | ({"annotation": ann} if ann is not None else {}))
    return out


def _identifiers(target: Node) -> list[Node]:
    """Names bound by a target made of names, tuples/lists and stars (attributes bind nothing)."""
    if target.type == "identifier":
        return [target]
    if target.type in _TARGETS or target.type in (
        "list_splat_pattern",
        "list_splat",
        "parenthesized_expression",
    ):
        return [i for c in target.named_children for i in _identifiers(c)]
    return []
