"""Every file's route facts, indexed: scopes, their ops, what each name is assigned, who calls what.

A ``Place`` is where an expression is evaluated: a module file and a scope inside it (the
qualified name of a function, "" for the module). The index answers the local questions name
resolution needs before it falls back to the symbol table: which statements of a scope (or of an
enclosing function, or of any method of the same class for ``self.x``) bind a name, which
parameters a function has, and which statements call a function.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from kb_assets.core.models import JSON, Grounding
from kb_assets.core.program import Program, SourceFile

EXTRACTOR_ID = "api_routes"


@dataclass(frozen=True, slots=True)
class Place:
    """A module file and a scope in it ("" is module level)."""

    source: SourceFile
    scope: str

    @property
    def module(self) -> str:
        """The module's dotted name."""
        return self.source.module or ""

    def ground(self, role: str, span: int | None = None) -> Grounding:
        """A grounding edge on ``span``, else on the scope's own span (module or function)."""
        return self.source.ground(span if span is not None else 0, role)


@dataclass(frozen=True, slots=True)
class Op:
    """One recorded statement, where it runs and its position in its file's op list."""

    place: Place
    index: int
    data: Mapping[str, JSON]

    @property
    def kind(self) -> str:
        """``assign``, ``for``, ``call``, ``route`` or ``return``."""
        return str(self.data["op"])

    @property
    def line(self) -> int:
        """The 1-based line the statement starts on."""
        return int(self.data["line"])

    @property
    def order(self) -> tuple[str, int]:
        """Deterministic execution-order key: file path, then source order."""
        return (self.place.source.path, self.index)


class FactsIndex:
    """The commit's route facts, indexed for name resolution."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self.scopes: dict[tuple[str, str], Mapping[str, JSON]] = {}
        self.ops: list[Op] = []
        self.bindings: dict[tuple[str, str, str], list[Op]] = defaultdict(list)
        self.returns: dict[tuple[str, str], list[Op]] = defaultdict(list)
        self.sources: dict[str, SourceFile] = {}
        self._self: dict[tuple[str, str, str], list[Op]] | None = None
        for source, facts in program.facts(EXTRACTOR_ID):
            module = source.module or ""
            self.sources[module] = source
            for scope in facts["scopes"]:
                self.scopes[(module, scope["qualname"])] = scope
            for index, data in enumerate(facts["ops"]):
                op = Op(Place(source, data["scope"]), index, data)
                self.ops.append(op)
                if op.kind in ("assign", "for"):
                    self.bindings[(module, data["scope"], data["target"])].append(op)
                elif op.kind == "return":
                    self.returns[(module, data["scope"])].append(op)

    def place(self, module: str, scope: str = "") -> Place | None:
        """The place for a module (and scope), if the module is a parsed file of the commit."""
        source = self.sources.get(module) or self.program.by_module(module)
        return Place(source, scope) if source is not None else None

    def scope_span(self, place: Place) -> int:
        """The span ordinal of a place's scope: its function span, or the module span 0."""
        record = self.scopes.get((place.module, place.scope))
        return int(record["span"]) if record is not None else 0

    def is_function(self, module: str, qualname: str) -> bool:
        """Whether ``qualname`` is a function (or method) scope of ``module``."""
        return (module, qualname) in self.scopes

    def enclosing(self, place: Place) -> Iterator[str]:
        """The function scopes whose locals are visible from ``place``, innermost first."""
        scope = place.scope
        while scope:
            if self.is_function(place.module, scope):
                yield scope
            scope = scope.rpartition(".")[0]

    def local(self, place: Place, name: str) -> tuple[str, list[Op]] | None:
        """The function scope that binds ``name`` as seen from ``place``, and its binding ops."""
        for scope in self.enclosing(place):
            ops = self.bindings.get((place.module, scope, name))
            params = self.scopes[(place.module, scope)].get("params", [])
            if ops or name in params:
                return scope, list(ops or [])
        return None

    def module_binding(self, module: str, name: str) -> Op | None:
        """The last module-level assignment of ``name`` in ``module`` (as Python leaves it)."""
        ops = self.bindings.get((module, "", name))
        return ops[-1] if ops else None

    def method_class(self, place: Place, classes: frozenset[str]) -> str | None:
        """The class (one of ``classes``) whose method, or a function nested in one, holds ``place``."""
        scope = place.scope
        while scope:
            parent = scope.rpartition(".")[0]
            if parent in classes:
                return parent
            scope = parent
        return None

    def self_bindings(self, module: str, cls: str, target: str) -> list[Op]:
        """Assignments of ``self.x`` (``target``) in any method of class ``cls``."""
        if self._self is None:
            self._self = defaultdict(list)
            for (m, scope, name), ops in sorted(self.bindings.items()):
                if name.startswith(("self.", "cls.")):
                    self._self[(m, scope.rpartition(".")[0], name)].extend(ops)
        return self._self.get((module, cls, target), [])

    def params(self, module: str, qualname: str) -> list[str]:
        """Parameter names of a function scope ([] when unknown)."""
        record = self.scopes.get((module, qualname))
        return list(record.get("params", [])) if record is not None else []

    def annotation(self, module: str, qualname: str) -> JSON:
        """The return annotation summary of a function scope, if recorded."""
        record = self.scopes.get((module, qualname))
        return record.get("returns") if record is not None else None

    def calls(self) -> Iterator[tuple[Place, Mapping[str, JSON]]]:
        """Every call recorded anywhere (statements, assigned values, returns, nested arguments)."""
        for op in self.ops:
            if op.kind == "call":
                yield from _nested_calls(op.place, op.data)
            elif op.kind in ("assign", "return", "for"):
                yield from _nested_calls(op.place, op.data["value"])


def _nested_calls(place: Place, value: JSON) -> Iterator[tuple[Place, Mapping[str, JSON]]]:
    """A call summary and every call inside its arguments."""
    if not isinstance(value, dict):
        return
    if "callee" in value and value.get("kind", "call") == "call":
        yield place, value
    for item in [*value.get("args", []), *value.get("kwargs", {}).values(), *value.get("items", [])]:
        yield from _nested_calls(place, item)
