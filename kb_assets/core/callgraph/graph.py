"""The commit's call graph: every call site resolved to first-party callees or external names.

``call_graph(program)`` (memoized on the last program, like the symbol table) evaluates each
site's callee in its scope and keeps:

* ``edges`` — (caller, callee) dotted pairs with their forms, call sites (caller span + line
  offset) and callee spans. Calling a class is an edge to the class (``instantiation``) and to the
  ``__init__`` it runs (``init``), when first-party. A decorator is called by the scope that runs
  the definition (``decorator``). A function passed as an argument is called by the function that
  calls its parameter (``passed_function``: ``run(cb)`` with ``def run(f): f()`` is ``run → cb``);
  arguments are matched to parameters by position and keyword, one level deep.
* ``externals`` — per caller, every call resolved outside the repository (process-path sinks).
* ``gaps`` — ``getattr(...)()``, ``eval`` and ``exec`` calls (``dynamic_call``), and ``stats``.
"""

from __future__ import annotations

import gc
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from kb_assets.core.callgraph.evaluate import Evaluator
from kb_assets.core.callgraph.index import ScopeRef, Scopes
from kb_assets.core.callgraph.passing import Passings
from kb_assets.core.callgraph.targets import Target, targets
from kb_assets.core.callgraph.values import Def, Either, Ext, Param, Resolved, Span
from kb_assets.core.models import JSON, Gap
from kb_assets.core.program import Program
from kb_assets.core.symbols.table import symbol_table

GAP_SOURCE = "calls"


@dataclass(slots=True)
class Edge:
    """Everything known about one (caller, callee) pair."""

    caller: Def
    callee: Def
    forms: set[str] = field(default_factory=set)
    sites: set[tuple[str, int, int]] = field(default_factory=set)
    """(caller path, caller span, line offset from the caller span's first line)."""
    callee_spans: set[tuple[str, int]] = field(default_factory=set)
    caller_spans: set[tuple[str, int]] = field(default_factory=set)
    main: bool = False
    """Some site lies under ``if __name__ == "__main__":``."""
    via: set[Span] = field(default_factory=set)
    """Other spans the resolution read (import statements, assignments, base classes, ...)."""


@dataclass(frozen=True, slots=True, order=True)
class ExternalSite:
    """A call that leaves the repository: the external dotted name and where it is called."""

    name: str
    path: str
    span: int
    offset: int
    mode: str | None = None
    main: bool = False


@dataclass(slots=True)
class CallGraph:
    """The resolved call graph of one program."""

    evaluator: Evaluator
    """What resolved the graph (entry-point detection evaluates decorators with it)."""
    edges: dict[tuple[str, str], Edge] = field(default_factory=dict)
    externals: dict[str, list[ExternalSite]] = field(default_factory=dict)
    nodes: dict[str, Def] = field(default_factory=dict)
    gaps: list[Gap] = field(default_factory=list)
    stats: Counter[str] = field(default_factory=Counter)
    _out: dict[str, list[Edge]] | None = None

    def add_edge(self, caller: Def, target: Target, site: tuple[str, int, int], main: bool) -> None:
        """Record one resolved call site of ``caller`` (at ``site``: path, span, line offset)."""
        callee, forms, _, via = target
        edge = self.edges.get((caller.dotted, callee.dotted))
        if edge is None:
            edge = self.edges[(caller.dotted, callee.dotted)] = Edge(caller, callee)
        edge.forms |= forms
        edge.via |= via
        edge.sites.add(site)
        edge.callee_spans.add((callee.path, callee.span))
        edge.caller_spans.add((site[0], site[1]))
        edge.main = edge.main or main
        self.nodes.setdefault(caller.dotted, caller)
        self.nodes.setdefault(callee.dotted, callee)

    def callees(self, caller: str) -> list[Edge]:
        """Outgoing edges of a node, in callee order (indexed on first use)."""
        if self._out is None:
            self._out = {}
            for key in sorted(self.edges):
                self._out.setdefault(key[0], []).append(self.edges[key])
        return self._out.get(caller, [])


_last: tuple[Program, CallGraph] | None = None


def call_graph(program: Program) -> CallGraph:
    """The program's call graph, built once and shared by the extractors that need it."""
    global _last  # noqa: PLW0603 - a one-entry memo, like the symbol table's
    if _last is None or _last[0] is not program:
        _last = (program, build(program))
    return _last[1]


def build(program: Program) -> CallGraph:
    """Resolve every call site of the program.

    The cyclic garbage collector is paused meanwhile: resolution allocates millions of small,
    acyclic objects next to the program's facts, and each full collection would walk them all.
    """
    paused = gc.isenabled()
    gc.disable()
    try:
        return _build(program)
    finally:
        if paused:
            gc.enable()


def _build(program: Program) -> CallGraph:
    scopes = Scopes(program)
    ev = Evaluator(scopes, symbol_table(program))
    graph = CallGraph(evaluator=ev)
    passings = Passings(ev)
    for ref in scopes.refs():
        caller = scopes.defn(ref)
        graph.nodes.setdefault(caller.dotted, caller)
        for site in scopes.record(ref).get("calls", []):
            _site(graph, passings, ref, caller, site)
    passings.resolve(graph)
    for path in sorted(scopes.files):
        for line, text in scopes.program.files[path].facts.get("calls", {}).get("dyn", []):
            graph.gaps.append(Gap(path, "dynamic_call", f"call through {text}", int(line), GAP_SOURCE))
    return graph


@dataclass(frozen=True, slots=True)
class _Site:
    """One call site being resolved."""

    ref: ScopeRef
    caller: Def
    offset: int
    extra: Mapping[str, JSON]


def _site(graph: CallGraph, passings: Passings, ref: ScopeRef, caller: Def, site: list[JSON]) -> None:
    extra = site[2] if len(site) > 2 else {}
    resolved = graph.evaluator.expr(ref, str(site[0]))
    graph.stats["sites"] += 1
    if resolved is None:
        graph.stats["unresolved"] += 1
        return
    forms = resolved.forms | ({"decorator"} if extra.get("d") else set())
    for value in resolved.value.options if isinstance(resolved.value, Either) else (resolved.value,):
        _value(graph, passings, _Site(ref, caller, int(site[1]), extra), Resolved(value, forms, resolved.via))


def _value(graph: CallGraph, passings: Passings, site: _Site, resolved: Resolved) -> None:
    """Record what calling one (alternative) value of a site's callee does."""
    value, main = resolved.value, bool(site.extra.get("m"))
    if isinstance(value, Ext):
        graph.stats["external"] += 1
        mode = site.extra.get("mode")
        ext = ExternalSite(value.name, site.ref.path, site.caller.span, site.offset, mode, main)
        graph.externals.setdefault(site.caller.dotted, []).append(ext)
        return
    if isinstance(value, Param):
        graph.stats["parameter"] += 1
        passings.parameter_call(value, site.caller, site.offset, main)
        return
    found = targets(graph.evaluator, resolved)
    graph.stats["first_party" if found else "unresolved"] += 1
    for target in found:
        graph.add_edge(site.caller, target, (site.ref.path, site.caller.span, site.offset), main)
        if "a" in site.extra or "k" in site.extra:
            passings.argument(target, site.extra, site.ref)
