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

On a large program two forked copies of the process resolve the earlier and the later scopes at
the same time and the parts are merged into the one-pass graph (``parts``); that rests on memoized answers not
depending on the order of resolution (``guards``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from functools import partial
from itertools import chain, groupby
from typing import NamedTuple, Protocol

from kb_assets.core.callgraph import parts, resolutions, reuse
from kb_assets.core.callgraph.evaluate import Evaluator
from kb_assets.core.callgraph.index import ReadingScopes, ScopeRef, Scopes
from kb_assets.core.callgraph.passing import Passings
from kb_assets.core.callgraph.reads import Reads
from kb_assets.core.callgraph.resolutions import (
    ARGUMENT,
    EDGE,
    EXTERNAL,
    NODE,
    PARAMETER_CALL,
    FileLog,
    Resolutions,
    replay,
)
from kb_assets.core.callgraph.targets import Target, targets
from kb_assets.core.callgraph.values import (
    FORM,
    NO_FORMS,
    NO_SPANS,
    Def,
    Either,
    Ext,
    Forms,
    Param,
    Resolved,
    Span,
    union_spans,
)
from kb_assets.core.collector import paused_gc
from kb_assets.core.forked import fork
from kb_assets.core.models import JSON, Gap
from kb_assets.core.program import Program
from kb_assets.core.program_memo import PerProgram
from kb_assets.core.symbols.table import symbol_table

GAP_SOURCE = "calls"


class Edge:
    """Everything known about one (caller, callee) pair, kept compact: one of these exists per edge
    of the commit, so it holds a forms mask, the line offsets of its sites in the caller's span (a
    site elsewhere, in another definition of the same dotted caller, is rare) and one shared span
    set."""

    __slots__ = ("callee", "callee_spans", "caller", "forms", "main", "offsets", "others", "via")

    def __init__(self, caller: Def, callee: Def, callee_spans: tuple[Span, ...]) -> None:
        self.caller, self.callee = caller, callee
        self.callee_spans = callee_spans
        """The callee's definition spans (more than one when a name is defined twice)."""
        self.forms: Forms = NO_FORMS
        self.offsets: list[int] = []
        """Line offsets of the sites in ``caller``'s span (from its first line); may repeat."""
        self.others: list[tuple[str, int, int]] | None = None
        """Sites in another span of a caller with the same dotted path: (path, span, line offset)."""
        self.main = False
        """Some site lies under ``if __name__ == "__main__":``."""
        self.via: frozenset[Span] = NO_SPANS
        """Other spans the resolution read (import statements, assignments, base classes, ...)."""

    def add_site(self, path: str, span: int, offset: int) -> None:
        """One more call site (caller path, caller span, line offset)."""
        if span == self.caller.span and path == self.caller.path:
            self.offsets.append(offset)
        elif self.others is None:
            self.others = [(path, span, offset)]
        else:
            self.others.append((path, span, offset))

    @property
    def sites(self) -> list[tuple[str, int, int]]:
        """Every site as (caller path, caller span, line offset from the caller span's first line)."""
        path, span = self.caller.path, self.caller.span
        own = [(path, span, offset) for offset in self.offsets]
        return own + self.others if self.others else own

    @property
    def caller_spans(self) -> set[tuple[str, int]]:
        """The caller's spans that hold a site (one, unless a name is defined twice)."""
        return {(path, span) for path, span, _ in self.sites}


class ExternalSite(NamedTuple):
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
    helped: bool = False
    """Whether a forked copy resolved some of the scopes (``parts``)."""
    resolved: int | None = None
    """Files resolved again from the last commit's resolutions (None: every file was resolved)."""
    since: str | None = None
    """The commit whose resolutions this graph replayed (None: resolved in full)."""
    changed: set[tuple[str, str]] = field(default_factory=set)
    """With ``since``: the keys of the edges that may differ from that commit's graph (those with
    a caller of a file resolved again, and those passed functions added to then or now); every
    other edge is, field for field, that commit's."""
    _out: dict[str, list[Edge]] | None = None
    _spans: dict[Span, tuple[Span, ...]] = field(default_factory=dict)
    """One shared ``callee_spans`` tuple per callee span: most edges have no other (memory)."""

    def add_edge(self, caller: Def, target: Target, site: tuple[str, int, int], main: bool) -> None:
        """Record one resolved call site of ``caller`` (at ``site``: path, span, line offset)."""
        callee, forms, _, via = target
        key = (caller.dotted, callee.dotted)
        edge = self.edges.get(key)
        if edge is None:
            span = (callee.path, callee.span)
            spans = self._spans.get(span)
            if spans is None:
                spans = self._spans[span] = (span,)
            edge = self.edges[key] = Edge(caller, callee, spans)
            self.nodes.setdefault(caller.dotted, caller)
            self.nodes.setdefault(callee.dotted, callee)
        if callee is not edge.callee and (callee.path, callee.span) not in edge.callee_spans:
            edge.callee_spans += ((callee.path, callee.span),)
        # The common cases inline (this runs once per resolved site): no new span read, a site in
        # the edge's own caller span, not under ``__main__``.
        edge.forms |= forms
        if via and via is not edge.via:
            edge.via = union_spans(edge.via, via)
        site_path, site_span, offset = site
        if site_span == edge.caller.span and site_path == edge.caller.path:
            edge.offsets.append(offset)
        else:
            edge.add_site(site_path, site_span, offset)
        if main:
            edge.main = True

    def close(self) -> None:
        """Free the evaluator's reference cycles once the graph is no longer used (``PerProgram``)."""
        self.evaluator.close()

    def callees(self, caller: str) -> list[Edge]:
        """Outgoing edges of a node, in callee order (indexed on first use: grouped by caller, then
        each group sorted, 45 -> 26 ms for Django's 76k edges against one sort of every key)."""
        if self._out is None:
            out: dict[str, list[Edge]] = {}
            for (source, _), edge in self.edges.items():
                group = out.get(source)
                if group is None:
                    out[source] = [edge]
                else:
                    group.append(edge)
            for group in out.values():
                if len(group) > 1:
                    group.sort(key=_callee_path)
            self._out = out
        return self._out.get(caller, [])


def _callee_path(edge: Edge) -> str:
    return edge.callee.dotted


def call_graph(program: Program) -> CallGraph:
    """The program's call graph, built once and shared by the extractors that need it."""
    return _graphs(program)


_graphs: PerProgram[CallGraph] = PerProgram(lambda program: build(program), CallGraph.close)  # noqa: PLW0108 - late-bound

_kept: Resolutions | None = None
"""What the last build resolved, while this process keeps it (``kept_resolutions``)."""
_keeping = False
_kept_edges: dict[tuple[str, str], Edge] | None = None
"""The edges of the build that made ``_kept``, set and cleared with it: most are the next
commit's edges as they are (``reuse``)."""


class ResolutionStore(Protocol):
    """Where a process that indexes one commit finds an earlier run's resolutions and leaves its
    own for the next run (``resolutions_in``)."""

    def load(self) -> Resolutions | None:
        """The resolutions last saved, if they are readable and were made by this very code."""

    def save(self, kept: Resolutions) -> None:
        """Leave ``kept`` for the next run (best effort)."""


_store: ResolutionStore | None = None
"""The store of ``resolutions_in``, while it is active."""


@contextmanager
def resolutions_in(store: ResolutionStore) -> Iterator[None]:
    """Within: a build with nothing kept in this process starts from ``store``'s resolutions (an
    earlier run's, of any commit with the same files: ``resolutions.stale`` decides what they
    still vouch for) and saves its own there, so that consecutive ``kb index`` runs re-resolve
    only what a change can reach, as a watch does in memory. A watch keeps its own in memory
    and does not save them after each commit."""
    global _store  # noqa: PLW0603 - a process-wide setting, like ``kept_resolutions``
    previous, _store = _store, store
    try:
        yield
    finally:
        _store = previous


@contextmanager
def kept_resolutions() -> Iterator[None]:
    """Within: each build keeps its per-file resolutions, so that the next commit's graph
    re-resolves only the files a change can reach (``resolutions``), for a process that indexes
    commit after commit (``kb watch``). A process that indexes one commit reads and leaves them
    in a ``resolutions_in`` store instead."""
    global _keeping, _kept, _kept_edges
    previous, _keeping, _kept, _kept_edges = _keeping, True, None, None
    try:
        yield
    finally:
        _keeping, _kept, _kept_edges = previous, None, None


def kept_now() -> Resolutions | None:
    """What the last build kept while ``kept_resolutions`` is active (None before one), for a
    watch to leave in a ``resolutions_in`` file between its rounds."""
    return _kept


def digest_kept() -> None:
    """Make the digest of every kept log now (``reuse.digest``), for a watch waiting for its next
    commit: the next build needs them all, and the first build after a full one made them on its
    commit's way (Django: 0.28 instead of 0.18 s). Logs that have one are left as they are."""
    if _kept is not None and _kept_edges is not None:
        for log in _kept.logs.values():
            reuse.digest(log)


def build(program: Program) -> CallGraph:
    """Resolve every call site of the program (the garbage collector paused, see ``paused_gc``);
    from the last build's resolutions and edges when this process keeps them, else from those
    of the ``resolutions_in`` store if one is active."""
    global _kept, _kept_edges  # noqa: PLW0603 - see kept_resolutions
    # Never two commits' resolutions at once; resolutions read from a store come without edges.
    previous, prior, _kept, _kept_edges = _kept, _kept_edges, None, None
    store = _store
    if previous is None and store is not None:
        previous = store.load()
    with paused_gc():
        graph, kept = _build(program, previous=previous, keep=_keeping or store is not None, prior=prior)
    if _keeping:
        _kept = kept
        _kept_edges = graph.edges if kept is not None else None
    elif store is not None and kept is not None:
        store.save(kept)
    return graph


def _build(
    program: Program,
    cut: int | None = None,
    *,
    previous: Resolutions | None = None,
    keep: bool = False,
    prior: Mapping[tuple[str, str], Edge] | None = None,
) -> tuple[CallGraph, Resolutions | None]:
    """Resolve the program's scopes into a graph: only the files ``previous`` cannot vouch for
    (``resolutions.stale``), the others replayed from it, taking the edges of ``prior`` (the graph
    ``previous`` was recorded with) that no change can reach (``reuse``); or all of them, those
    before ``cut`` and the rest each in a forked copy where one can be made, at the same time
    (``parts``; ``cut`` defaults to ``parts.split``'s). With ``keep``, also what it resolved, for
    the next build."""
    graph, passings = _empty(program, tracking=keep)
    scopes = graph.evaluator.scopes
    stars = resolutions.star_names(graph.evaluator.table) if keep else {}
    stale = resolutions.stale(previous, program, graph.evaluator, stars) if previous is not None else None
    logs: dict[str, FileLog] | None = {} if keep else None
    if stale is None or previous is None or logs is None:
        _resolve_all(graph, passings, cut, logs)
    else:
        _replay_all(graph, passings, previous=previous, stale=stale, logs=logs, prior=prior)
        graph.resolved, graph.since = len(stale), previous.sha
    passed = passings.resolve(graph)
    if stale is not None and previous is not None and logs is not None:
        callers = resolutions.callers(logs[path] for path in stale) | resolutions.callers(
            previous.logs[path] for path in stale if path in previous.logs
        )
        graph.changed = {key for key in graph.edges if key[0] in callers} | passed | previous.passed
    graph.evaluator.release()
    graph._spans.clear()
    for path in sorted(scopes.files):
        for line, text in scopes.program.files[path].facts.get("calls", {}).get("dyn", []):
            graph.gaps.append(Gap(path, "dynamic_call", f"call through {text}", int(line), GAP_SOURCE))
    return graph, resolutions.record(program, stars, logs, passed) if logs is not None else None


def _replay_all(
    graph: CallGraph,
    passings: Passings,
    *,
    previous: Resolutions,
    stale: set[str],
    logs: dict[str, FileLog],
    prior: Mapping[tuple[str, str], Edge] | None,
) -> None:
    """Resolve the ``stale`` files into ``logs`` (resolution reads the program, never the graph,
    so ahead of the others), then replay every file's log in path order: theirs, or the one
    ``previous`` kept, taking ``prior``'s edges where no change can reach them."""
    scopes = graph.evaluator.scopes
    for path in sorted(stale):
        _resolve(graph.evaluator, passings, list(scopes.file_refs(path)), None, logs)
    dirty: set[tuple[str, str]] = set()
    if prior is not None:
        dropped = (log for path, log in previous.logs.items() if path in stale or path not in scopes.records)
        dirty = reuse.dirty_keys(chain(dropped, (logs[path] for path in stale)), previous.passed)
    rebase = resolutions.rebased(previous, tuple(sorted(scopes.program.files)))
    for path in sorted(scopes.records):
        if path in stale:
            replay(graph, passings, logs[path])
            continue
        log = previous.logs[path] if rebase is None else rebase(previous.logs[path])
        if prior is None:
            logs[path] = replay(graph, passings, log)
        else:
            logs[path] = reuse.replay_reusing(graph, passings, log, prior, dirty)


def _resolve_all(
    graph: CallGraph, passings: Passings, cut: int | None, logs: dict[str, FileLog] | None
) -> None:
    """Resolve every scope: those before ``cut`` and those after it each in a forked copy when one
    can be made, both at once, their logs replayed here in path order (``parts``); each file's log
    into ``logs`` if given. A part whose copy cannot be made or fails is resolved here."""
    ev = graph.evaluator
    refs = list(ev.scopes.refs())
    cut = parts.split(ev.scopes, refs) if cut is None else cut
    tracking = logs is not None
    if cut >= len(refs):
        _resolve(ev, passings, refs, graph, logs)
        return
    program = ev.scopes.program
    halves = (refs[:cut], refs[cut:])
    first = fork(partial(resolve_part, program, halves[0], tracking))
    second = fork(partial(resolve_part, program, halves[1], tracking)) if first is not None else None
    with first or nullcontext(), second or nullcontext():
        for helper, half in zip((first, second), halves, strict=True):
            part = helper.result() if helper is not None else None
            if part is None:
                _resolve(ev, passings, half, graph, logs)
                continue
            graph.helped = True
            for path, log in part.items():
                replay(graph, passings, log)
                if logs is not None:
                    _keep(logs, path, log)


def _empty(program: Program, *, tracking: bool = False) -> tuple[CallGraph, Passings]:
    """A graph with a fresh evaluator over ``program`` (recording what it reads when ``tracking``),
    and its passed-function records."""
    scopes = (
        ReadingScopes(program, Reads(program.files, program.module_map.paths))
        if tracking
        else Scopes(program)
    )
    ev = Evaluator(scopes, symbol_table(program))
    return CallGraph(evaluator=ev), Passings(ev)


def resolve_part(program: Program, refs: Sequence[ScopeRef], tracking: bool) -> dict[str, FileLog]:
    """Resolve ``refs`` with a fresh evaluator (in a forked copy: ``_build``) and hand back each
    file's log, for the parent to replay in path order (the copy builds no graph)."""
    graph, passings = _empty(program, tracking=tracking)
    logs: dict[str, FileLog] = {}
    _resolve(graph.evaluator, passings, refs, None, logs)
    return logs


def _resolve(
    ev: Evaluator,
    passings: Passings,
    refs: Sequence[ScopeRef],
    graph: CallGraph | None,
    logs: dict[str, FileLog] | None,
) -> None:
    """Resolve ``refs`` (in path order) file by file: each file's scopes write its log (what they
    did and read), which is then replayed into ``graph`` when given and kept in ``logs`` when
    given (continuing a log already there). Resolution never writes the graph itself, so a graph
    is the replay of its files' logs by construction, whether they were resolved now or kept."""
    reads = ev.reads
    for path, group in groupby(refs, key=lambda ref: ref.path):
        log = FileLog()
        reads.bits = 0
        for ref in group:
            resolve_scope(ev, passings, ref, log)
        log.reads = reads.bits
        if graph is not None:
            replay(graph, passings, log)
        if logs is not None:
            _keep(logs, path, log)


def _keep(logs: dict[str, FileLog], path: str, log: FileLog) -> None:
    """File ``log`` as ``path``'s, after what is there already (a file whose scopes were split
    between two parts)."""
    if path in logs:
        logs[path].extend(log)
    else:
        logs[path] = log


def resolve_scope(ev: Evaluator, passings: Passings, ref: ScopeRef, log: FileLog) -> int:
    """Resolve every call site of one scope into ``log``; the number of sites."""
    caller = ev.scopes.defn(ref)
    log.ops += (NODE, caller)
    sites = ev.scopes.record(ref).get("calls", [])
    for site in sites:
        _site(ev, passings, ref, caller, site, log=log)
    return len(sites)


def _site(
    ev: Evaluator, passings: Passings, ref: ScopeRef, caller: Def, site: list[JSON], *, log: FileLog
) -> None:
    extra: Mapping[str, JSON] = site[2] if len(site) > 2 else _NO_EXTRA
    resolved = ev.expr(ref, site[0])
    stats = log.stats
    stats["sites"] += 1
    if resolved is None:
        stats["unresolved"] += 1
        return
    value = resolved.value
    offset: int = site[1]
    if type(value) is Ext:
        stats["external"] += 1
        ext = ExternalSite(value.name, ref.path, caller.span, offset, extra.get("mode"), bool(extra.get("m")))
        log.ops += (EXTERNAL, caller.dotted, ext)
        return
    if "d" in extra:
        resolved = Resolved(value, resolved.forms | FORM["decorator"], resolved.via)
    options = value.options if type(value) is Either else (value,)
    for option in options:
        alternative = resolved if option is value else Resolved(option, resolved.forms, resolved.via)
        _value(ev, passings, alternative, ref=ref, caller=caller, offset=offset, extra=extra, log=log)


_NO_EXTRA: Mapping[str, JSON] = {}


def _encloses(scopes: Scopes, param: Param, ref: ScopeRef) -> bool:
    """Whether a parameter is called inside its own function (or a function nested in it).

    Anywhere else — a parameter returned (``return func``) or stored (``self.f = f``) and called
    later — which argument it holds depends on the call that produced it, and the union of every
    argument ever passed would be a made-up edge for most of them: no edge (precision first)."""
    if param.path != ref.path:
        return False
    current: ScopeRef | None = ref
    while current is not None:
        if current.scope == param.scope:
            return True
        current = scopes.parent(current)
    return False


def _value(
    ev: Evaluator,
    passings: Passings,
    resolved: Resolved,
    *,
    ref: ScopeRef,
    caller: Def,
    offset: int,
    extra: Mapping[str, JSON],
    log: FileLog,
) -> None:
    """Record what calling one (alternative) value of a site's callee does."""
    value, main = resolved.value, bool(extra.get("m"))
    stats, ops = log.stats, log.ops
    if type(value) is Ext:
        stats["external"] += 1
        ext = ExternalSite(value.name, ref.path, caller.span, offset, extra.get("mode"), main)
        ops += (EXTERNAL, caller.dotted, ext)
        return
    if type(value) is Param:
        if _encloses(ev.scopes, value, ref):
            stats["parameter"] += 1
            ops += (PARAMETER_CALL, value, caller, offset, main)
        else:
            stats["unresolved"] += 1
        return
    found = targets(ev, resolved)
    stats["first_party" if found else "unresolved"] += 1
    for target in found:
        ops += (EDGE, caller, target[0], target[1], target[3], offset, main)
        if "a" in extra or "k" in extra:
            for argument in passings.arguments_of(target, extra, ref):
                ops += (ARGUMENT, argument)
