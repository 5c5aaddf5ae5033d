"""Call graph (``call_edge``): one artifact per resolved first-party caller → callee pair.

``caller`` and ``callee`` are dotted paths of functions, methods or classes; code at module level
is called from the module (``package.module``), a class body from the class. ``forms`` says which
resolution forms produced the edge: ``direct`` (same module), ``import`` (imported names, aliases,
``import a.b as c``, module attributes), ``self_method`` (``self.m()``/``cls.m()``), ``inherited``
(found on a base class, C3 order), ``super``, ``instantiation`` (calling a class) and ``init``
(the ``__init__`` that runs), ``decorator``, ``closure`` (nested functions), ``passed_function``,
``returned_function``, ``assignment`` (calls through simple assignments and instance attributes)
and ``annotated`` (receivers typed by an annotation). Resolution is in ``kb_assets.core.callgraph``;
anything it cannot pin down statically yields no edge. ``getattr(...)()``, ``eval`` and ``exec``
are ``dynamic_call`` gaps.

The payload stores call-site line *offsets* from the caller span's first line, per caller span
(``site_offsets``); ``render`` turns them into ``lines`` at each commit. Grounding: the caller's
span(s) (role ``caller``), the callee's (role ``callee``) and every other span the resolution read
(role ``via``: import statements followed, module-level assignments, the classes a method lookup
consulted, enclosing functions, the factory whose return was called, the scope that passed a
function), so that whatever changes how an edge is resolved changes its identity.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from kb_assets.core.callgraph.collect import collect_calls
from kb_assets.core.callgraph.graph import CallGraph, Edge, call_graph
from kb_assets.core.callgraph.index import FACTS_ID
from kb_assets.core.callgraph.values import form_names
from kb_assets.core.collector import paused_gc
from kb_assets.core.extractors.base import Draft, Extraction, LocatedGrounding, OnDemandDrafts
from kb_assets.core.models import JSON, Grounding
from kb_assets.core.program import Program
from kb_assets.core.spans import ParsedSource


class CallsExtractor:
    """The ``call_edges`` asset's extractor."""

    extractor_id = FACTS_ID
    version = "2"  # 2: answers inside resolution cycles no longer depend on the order (``guards``)
    facts_version = "1"
    kind = "call_edge"
    asset_name = "call_edges"
    description = "Call graph: resolved first-party caller -> callee pairs with every call-site line."
    positions = ("site_offsets",)
    """Payload keys that place the edge's sites inside its grounding spans (line offsets from a
    span's first line): they move when lines inside an unchanged span do (``kb_gates.history``)."""

    def collect(self, source: ParsedSource) -> JSON:
        """Call sites and local bindings of every scope of one blob."""
        return collect_calls(source)

    def resolve(self, program: Program) -> Extraction:
        """One draft per resolved (caller, callee) pair (made when read: ``EdgeDrafts``), plus
        the dynamic-call gaps."""
        with paused_gc():
            graph = call_graph(program)
        return Extraction(drafts=EdgeDrafts(program, graph, sorted(graph.edges)), gaps=tuple(graph.gaps))

    def render(self, payload: Mapping[str, JSON], grounding: Sequence[LocatedGrounding]) -> dict[str, JSON]:
        """Replace ``site_offsets`` by ``lines``: each offset added to its caller span's first line."""
        starts = {g.span_id: g.start_line for g in grounding if g.role == "caller"}
        offsets: Mapping[str, list[int]] = payload.get("site_offsets", {})
        lines = sorted({starts[sid] + off for sid, offs in offsets.items() if sid in starts for off in offs})
        rendered = {k: v for k, v in payload.items() if k != "site_offsets"}
        return {**rendered, "lines": lines}


class EdgeDrafts(OnDemandDrafts):
    """The drafts of the graph's edges under ``keys`` (caller, callee), in that order, each made
    when read. Held all at once, Django's 75,908 drafts were ~40-60 MiB of the full index's peak
    and ~0.9 s of one core before the writes could start; made a batch at a time by each writer
    (this process and a forked copy, ``kb_assets.indexing.artifact_writes``), they are neither.
    The keys are the graph's edge keys, each once, and the logical key is a function of the key
    (a dotted path holds no ``->``): every logical key occurs once, as ``OnDemandDrafts`` needs.

    A read of one draft shares the grounding edges made for earlier reads (``_Groundings``);
    iterating makes them a chunk at a time with the collector paused (``paused_gc``): building
    drafts allocates ~1M small acyclic objects next to the graph, which young-generation
    collections would otherwise examine over and over."""

    CHUNK = 4096

    def __init__(self, program: Program, graph: CallGraph, keys: Sequence[tuple[str, str]]) -> None:
        self._program, self._graph, self._keys = program, graph, keys
        self._grounds: _Groundings | None = None

    def __len__(self) -> int:
        return len(self._keys)

    def draft(self, index: int) -> Draft:
        """The draft of the edge ``keys[index]``."""
        if self._grounds is None:
            self._grounds = _Groundings(self._program)
        return _draft(self._grounds, self._graph.edges[self._keys[index]])

    def part(self, start: int, end: int) -> EdgeDrafts:
        """The drafts of ``keys[start:end]`` (their own grounding cache: a part may be read in a
        forked copy)."""
        return EdgeDrafts(self._program, self._graph, self._keys[start:end])

    def __iter__(self) -> Iterator[Draft]:
        for start in range(0, len(self._keys), self.CHUNK):
            with paused_gc():
                chunk = [self.draft(i) for i in range(start, min(start + self.CHUNK, len(self._keys)))]
            yield from chunk
            del chunk


def logical_key(caller: str, callee: str) -> str:
    """The logical key of the edge from ``caller`` to ``callee`` (dotted paths)."""
    return f"call:{caller}->{callee}"


_Key = tuple[str, str, str]
"""A grounding edge's fields (span id, path, role): hashed and ordered in C, unlike ``Grounding``."""


class _Groundings:
    """Grounding edges by (path, span), made once: thousands of edges share a caller span, and most
    share their ``via`` span set with many others, so each set's edges are made once too. Edges are
    handled as ``_Key`` tuples (same equality and order as ``Grounding``) until the draft is built."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self.made: dict[tuple[str, int], tuple[str, _Key, _Key, _Key]] = {}
        self.vias: dict[frozenset[tuple[str, int]], list[tuple[tuple[str, int], _Key]]] = {}
        self.edges: dict[_Key, Grounding] = {}

    def __call__(self, path: str, span: int) -> tuple[str, _Key, _Key, _Key]:
        """The span's id and the keys of its ``caller``, ``callee`` and ``via`` grounding edges."""
        key = (path, span)
        found = self.made.get(key)
        if found is None:
            span_id = self.program.files[path].spans[span].span_id
            found = self.made[key] = (
                span_id,
                (span_id, path, "caller"),
                (span_id, path, "callee"),
                (span_id, path, "via"),
            )
        return found

    def via(self, spans: frozenset[tuple[str, int]]) -> list[tuple[tuple[str, int], _Key]]:
        """The ``via`` edge key of every span of a set (keyed by the set: sets are shared)."""
        found = self.vias.get(spans)
        if found is None:
            found = self.vias[spans] = [(key, self(*key)[3]) for key in spans]
        return found

    def grounding(self, keys: set[_Key]) -> tuple[Grounding, ...]:
        """The edges of ``keys`` in ``Grounding`` order, each edge object made once."""
        out = []
        for key in sorted(keys):
            found = self.edges.get(key)
            if found is None:
                found = self.edges[key] = Grounding(*key)
            out.append(found)
        return tuple(out)


def _draft(ground: _Groundings, edge: Edge) -> Draft:
    callers: dict[tuple[str, int], _Key] = {}
    own = (edge.caller.path, edge.caller.span)
    if edge.others is None:  # the usual case: every site in the caller's one span
        span_id, callers[own], _, _ = ground(*own)
        site_offsets: dict[str, JSON] = {span_id: sorted(set(edge.offsets))}
    else:
        offsets: dict[str, set[int]] = {}
        if edge.offsets:
            span_id, callers[own], _, _ = ground(*own)
            offsets[span_id] = set(edge.offsets)
        for path, span, offset in edge.others:
            span_id, caller, _, _ = ground(path, span)
            offsets.setdefault(span_id, set()).add(offset)
            callers[path, span] = caller
        site_offsets = {sid: sorted(offs) for sid, offs in sorted(offsets.items())}
    callees = edge.callee_spans
    keys = set(callers.values())
    keys.update(ground(p, s)[2] for p, s in callees)
    keys.update(k for span, k in ground.via(edge.via) if span not in callers and span not in callees)
    payload: dict[str, JSON] = {
        "caller": edge.caller.dotted,
        "callee": edge.callee.dotted,
        "forms": form_names(edge.forms),
        "site_offsets": site_offsets,
    }
    key = logical_key(edge.caller.dotted, edge.callee.dotted)
    return Draft(kind="call_edge", logical_key=key, payload=payload, grounding=ground.grounding(keys))
