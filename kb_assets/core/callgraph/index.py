"""Every file's call facts, indexed for resolution: scopes by (path, index) and by defining span.

``ScopeRef`` names one scope of one file. ``Scopes`` turns refs into their records, their
``Def`` (dotted path, span) and their enclosing scopes, and finds the scope of a definition the
symbol table reported as (path, span ordinal).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from kb_assets.core.callgraph.values import Def, DefKind
from kb_assets.core.models import JSON
from kb_assets.core.program import Program, SourceFile

FACTS_ID = "calls"
"""The id under which the ``calls`` extractor caches its per-blob facts."""

_KINDS: dict[str, DefKind] = {"m": "module", "c": "class", "f": "function"}


@dataclass(frozen=True, slots=True, order=True)
class ScopeRef:
    """One scope of one file."""

    path: str
    index: int


class Scopes:
    """Call facts of every module file of a program."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self.files: dict[str, SourceFile] = {}
        self.records: dict[str, list[Mapping[str, JSON]]] = {}
        self.by_span: dict[str, dict[int, int]] = {}
        self._defs: dict[ScopeRef, Def] = {}
        for source, facts in program.facts(FACTS_ID):
            scopes = facts.get("scopes", [])
            self.files[source.path] = source
            self.records[source.path] = scopes
            self.by_span[source.path] = {int(s["s"]): i for i, s in enumerate(scopes)}

    def refs(self) -> Iterator[ScopeRef]:
        """Every scope of every file, in path then scope order."""
        for path in sorted(self.records):
            for index in range(len(self.records[path])):
                yield ScopeRef(path, index)

    def record(self, ref: ScopeRef) -> Mapping[str, JSON]:
        """The facts record of a scope."""
        return self.records[ref.path][ref.index]

    def module(self, ref: ScopeRef) -> str:
        """The dotted module the scope's file defines."""
        return self.files[ref.path].module or ""

    def defn(self, ref: ScopeRef) -> Def:
        """The definition a scope belongs to (its module for scope 0)."""
        found = self._defs.get(ref)
        if found is None:
            found = self._defs[ref] = self._defn(ref)
        return found

    def _defn(self, ref: ScopeRef) -> Def:
        rec = self.record(ref)
        source = self.files[ref.path]
        span = int(rec["s"])
        module = source.module or ""
        dotted = module if span == 0 else f"{module}.{source.spans[span].fq_symbol_path}"
        return Def(dotted, ref.path, span, _KINDS[str(rec["k"])], ref.index)

    def span(self, ref: ScopeRef) -> tuple[str, int]:
        """(path, span ordinal) of the definition a scope belongs to."""
        return ref.path, int(self.record(ref)["s"])

    def parent(self, ref: ScopeRef) -> ScopeRef | None:
        """The lexically enclosing scope (None for the module)."""
        up = self.record(ref).get("up")
        return ScopeRef(ref.path, int(up)) if up is not None else None

    def enclosing_function_or_module(self, ref: ScopeRef) -> ScopeRef | None:
        """Where a name not bound in ``ref`` is looked up next: class scopes are skipped."""
        parent = self.parent(ref)
        while parent is not None and self.record(parent)["k"] == "c":
            parent = self.parent(parent)
        return parent

    def at_span(self, path: str | None, span: int | None) -> ScopeRef | None:
        """The scope defined by span ``span`` of ``path`` (a class or function), if it has facts."""
        if path is None or span is None:
            return None
        index = self.by_span.get(path, {}).get(span)
        return ScopeRef(path, index) if index is not None else None

    def class_of_method(self, ref: ScopeRef) -> ScopeRef | None:
        """The class whose body directly defines this function, if any."""
        parent = self.parent(ref)
        return parent if parent is not None and self.record(parent)["k"] == "c" else None
