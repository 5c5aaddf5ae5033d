"""Every file's call facts, indexed for resolution: scopes by (path, index) and by defining span.

``ScopeRef`` names one scope of one file. ``Scopes`` turns refs into their records, their
``Def`` (dotted path, span) and their enclosing scopes, and finds the scope of a definition the
symbol table reported as (path, span ordinal). ``ReadingScopes`` also marks the file each accessor
reads into the read set in progress (``reads``), cached answers included.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import NamedTuple

from kb_assets.core.callgraph.reads import Reads
from kb_assets.core.callgraph.values import Def, DefKind
from kb_assets.core.models import JSON
from kb_assets.core.program import Program, SourceFile

FACTS_ID = "calls"
"""The id under which the ``calls`` extractor caches its per-blob facts."""

_KINDS: dict[str, DefKind] = {"m": "module", "c": "class", "f": "function"}

UNKNOWN, GLOBAL, NONLOCAL, PARAM, DEFINED, BOUND, ANNOTATED = range(7)
"""How a scope binds a name (``Scopes.names``): unknowably (shadowed, or bound in more than one
way), declared ``global``/``nonlocal``, as a parameter (data: its position), by a nested
definition (data: its scope), by simple assignments (data: the values) or by an annotation only."""

NameTable = dict[str, tuple[int, JSON]]
_UNSET: object = object()


class ScopeRef(NamedTuple):
    """One scope of one file (a named tuple: it is part of every memo key)."""

    path: str
    scope: int


class Scopes:
    """Call facts of every module file of a program."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self.reads = Reads(())
        """Where ``ReadingScopes`` marks what is read (nothing is marked here)."""
        self.files: dict[str, SourceFile] = {}
        self.records: dict[str, list[Mapping[str, JSON]]] = {}
        self._by_span: dict[str, dict[int, int]] = {}
        """Per file, each scope's index by its span, made when the file is first asked (a warm
        commit asks a few files: making all of Django's 41k took ~50 ms of each one)."""
        self._defs: dict[ScopeRef, Def] = {}
        self._names: dict[ScopeRef, NameTable | None] = {}
        self._enclosing: dict[ScopeRef, ScopeRef | None] = {}
        for source, facts in program.facts(FACTS_ID):
            scopes = facts.get("scopes", [])
            self.files[source.path] = source
            self.records[source.path] = scopes

    def release(self) -> None:
        """Drop the per-scope caches (definitions, name tables, enclosing scopes): each is a function
        of the call facts alone, so they are rebuilt identically when asked again."""
        self._defs.clear()
        self._names.clear()
        self._enclosing.clear()

    def refs(self) -> Iterator[ScopeRef]:
        """Every scope of every file, in path then scope order."""
        for path in sorted(self.records):
            for index in range(len(self.records[path])):
                yield ScopeRef(path, index)

    def file_refs(self, path: str) -> Iterator[ScopeRef]:
        """Every scope of one file, in scope order."""
        for index in range(len(self.records[path])):
            yield ScopeRef(path, index)

    def record(self, ref: ScopeRef) -> Mapping[str, JSON]:
        """The facts record of a scope."""
        return self.records[ref.path][ref.scope]

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
        return Def(dotted, ref.path, span, _KINDS[str(rec["k"])], ref.scope)

    def span(self, ref: ScopeRef) -> tuple[str, int]:
        """(path, span ordinal) of the definition a scope belongs to."""
        return ref.path, int(self.record(ref)["s"])

    def parent(self, ref: ScopeRef) -> ScopeRef | None:
        """The lexically enclosing scope (None for the module)."""
        up = self.record(ref).get("up")
        return ScopeRef(ref.path, int(up)) if up is not None else None

    def enclosing_function_or_module(self, ref: ScopeRef) -> ScopeRef | None:
        """Where a name not bound in ``ref`` is looked up next: class scopes are skipped."""
        if ref in self._enclosing:
            return self._enclosing[ref]
        parent = self.parent(ref)
        while parent is not None and self.record(parent)["k"] == "c":
            parent = self.parent(parent)
        self._enclosing[ref] = parent
        return parent

    def names(self, ref: ScopeRef) -> NameTable | None:
        """How the scope binds each name it binds (None for a module: the symbol table knows),
        built once per scope."""
        found = self._names.get(ref, _UNSET)
        if found is _UNSET:
            rec = self.record(ref)
            found = self._names[ref] = None if rec["k"] == "m" else _name_table(rec)
        return found  # type: ignore[return-value]

    def at_span(self, path: str | None, span: int | None) -> ScopeRef | None:
        """The scope defined by span ``span`` of ``path`` (a class or function), if it has facts."""
        if path is None or span is None:
            return None
        table = self._by_span.get(path)
        if table is None:
            scopes = self.records.get(path, [])
            table = self._by_span[path] = {int(s["s"]): i for i, s in enumerate(scopes)}
        index = table.get(span)
        return ScopeRef(path, index) if index is not None else None

    def class_of_method(self, ref: ScopeRef) -> ScopeRef | None:
        """The class whose body directly defines this function, if any."""
        parent = self.parent(ref)
        return parent if parent is not None and self.record(parent)["k"] == "c" else None


class ReadingScopes(Scopes):
    """``Scopes`` whose every accessor marks the file it reads (``reads``): a subclass, so that a
    build that records nothing pays nothing on these, the most called functions of resolution."""

    def __init__(self, program: Program, reads: Reads) -> None:
        super().__init__(program)
        self.reads = reads

    def record(self, ref: ScopeRef) -> Mapping[str, JSON]:
        """The facts record of a scope."""
        reads = self.reads
        reads.bits |= reads.bit.get(ref.path, 0)
        return self.records[ref.path][ref.scope]

    def module(self, ref: ScopeRef) -> str:
        """The dotted module the scope's file defines."""
        self.reads.mark(ref.path)
        return super().module(ref)

    def defn(self, ref: ScopeRef) -> Def:
        """The definition a scope belongs to (its module for scope 0)."""
        reads = self.reads
        reads.bits |= reads.bit.get(ref.path, 0)
        return super().defn(ref)

    def enclosing_function_or_module(self, ref: ScopeRef) -> ScopeRef | None:
        """Where a name not bound in ``ref`` is looked up next: class scopes are skipped."""
        self.reads.mark(ref.path)
        return super().enclosing_function_or_module(ref)

    def names(self, ref: ScopeRef) -> NameTable | None:
        """How the scope binds each name it binds (None for a module)."""
        reads = self.reads
        reads.bits |= reads.bit.get(ref.path, 0)
        return super().names(ref)

    def at_span(self, path: str | None, span: int | None) -> ScopeRef | None:
        """The scope defined by span ``span`` of ``path``, if it has facts."""
        if path is not None:
            self.reads.mark(path)
        return super().at_span(path, span)


def _name_table(rec: Mapping[str, JSON]) -> NameTable:
    """A scope record's bindings by name (see ``Scopes.names``); a name bound in two ways is unknown."""
    table: NameTable = {}
    seen: dict[str, int] = {}
    for i, raw in enumerate(rec.get("params") or ()):
        name = str(raw).lstrip("*")
        table[name], seen[name] = (PARAM, i), seen.get(name, 0) + 1
    for name, index in (rec.get("defs") or {}).items():
        table[name], seen[name] = (DEFINED, index), seen.get(name, 0) + 1
    for name, values in (rec.get("binds") or {}).items():
        table[name], seen[name] = (BOUND, values), seen.get(name, 0) + 1
    for name, annotation in (rec.get("ann") or {}).items():
        if name not in table:
            table[name] = (ANNOTATED, annotation)
    for name, count in seen.items():
        if count > 1:
            table[name] = (UNKNOWN, None)
    for name in rec.get("shadow") or ():
        table[str(name)] = (UNKNOWN, None)
    for name in rec.get("nonl") or ():
        table[str(name)] = (NONLOCAL, None)
    for name in rec.get("glob") or ():
        table[str(name)] = (GLOBAL, None)
    return table
