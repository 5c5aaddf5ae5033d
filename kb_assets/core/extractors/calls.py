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

from collections.abc import Mapping, Sequence

from kb_assets.core.callgraph.collect import collect_calls
from kb_assets.core.callgraph.graph import Edge, call_graph, paused_gc
from kb_assets.core.callgraph.index import FACTS_ID
from kb_assets.core.callgraph.values import form_names
from kb_assets.core.extractors.base import Draft, Extraction, LocatedGrounding
from kb_assets.core.models import JSON, Grounding
from kb_assets.core.program import Program
from kb_assets.core.spans import ParsedSource


class CallsExtractor:
    """The ``call_edges`` asset's extractor."""

    extractor_id = FACTS_ID
    version = "1"
    facts_version = "1"
    kind = "call_edge"
    asset_name = "call_edges"
    description = "Call graph: resolved first-party caller -> callee pairs with every call-site line."

    def collect(self, source: ParsedSource) -> JSON:
        """Call sites and local bindings of every scope of one blob."""
        return collect_calls(source)

    def resolve(self, program: Program) -> Extraction:
        """One draft per resolved (caller, callee) pair, plus the dynamic-call gaps."""
        with paused_gc():
            graph = call_graph(program)
            grounds = _Groundings(program)
            drafts = tuple(_draft(grounds, graph.edges[key]) for key in sorted(graph.edges))
        return Extraction(drafts=drafts, gaps=tuple(graph.gaps))

    def render(self, payload: Mapping[str, JSON], grounding: Sequence[LocatedGrounding]) -> dict[str, JSON]:
        """Replace ``site_offsets`` by ``lines``: each offset added to its caller span's first line."""
        starts = {g.span_id: g.start_line for g in grounding if g.role == "caller"}
        offsets: Mapping[str, list[int]] = payload.get("site_offsets", {})
        lines = sorted({starts[sid] + off for sid, offs in offsets.items() if sid in starts for off in offs})
        rendered = {k: v for k, v in payload.items() if k != "site_offsets"}
        return {**rendered, "lines": lines}


class _Groundings:
    """Grounding edges by (path, span, role), made once: thousands of edges share a caller span."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self.made: dict[tuple[str, int, str], Grounding] = {}

    def __call__(self, path: str, span: int, role: str) -> Grounding:
        key = (path, span, role)
        found = self.made.get(key)
        if found is None:
            found = self.made[key] = self.program.files[path].ground(span, role)
        return found

    def span_id(self, path: str, span: int) -> str:
        return self.program.files[path].spans[span].span_id


def _draft(ground: _Groundings, edge: Edge) -> Draft:
    offsets: dict[str, set[int]] = {}
    callers: set[tuple[str, int]] = set()
    for path, span, offset in edge.sites:
        offsets.setdefault(ground.span_id(path, span), set()).add(offset)
        callers.add((path, span))
    callees = edge.callee_spans
    grounding = {ground(p, s, "caller") for p, s in callers}
    grounding.update(ground(p, s, "callee") for p, s in callees)
    grounding.update(
        ground(p, s, "via") for p, s in edge.via if (p, s) not in callers and (p, s) not in callees
    )
    payload: dict[str, JSON] = {
        "caller": edge.caller.dotted,
        "callee": edge.callee.dotted,
        "forms": form_names(edge.forms),
        "site_offsets": {sid: sorted(offs) for sid, offs in sorted(offsets.items())},
    }
    key = f"call:{edge.caller.dotted}->{edge.callee.dotted}"
    return Draft(kind="call_edge", logical_key=key, payload=payload, grounding=tuple(sorted(grounding)))
