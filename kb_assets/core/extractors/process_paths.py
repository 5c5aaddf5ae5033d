"""Process paths (``process_path``): the shortest call chain from each entry point to each sink.

A second-order asset over the call graph (``call_edges``) and the entry points (``api_routes``,
``event_handlers``, CLI scripts and commands; see ``kb_assets.core.paths.entrypoints``). One artifact
per (entry point, sink), keyed ``path:ENTRY->SINK``; an entry point that reaches no sink yields
nothing. Payload: ``entrypoint``, ``entry_kind`` (``route``/``event``/``cli``), ``entry_details``
(``GET /items``, event names, ``__main__``, ``command``), ``sink`` (the external dotted name, or a
first-party function a repository declared a sink), ``sink_category``, ``chain`` (dotted paths,
entry point first, ending with the function that calls the sink), ``hops`` and ``sinks_digest``
(the effective sink registry, ``.kb/sinks.yaml`` included); ``sink_lines`` is rendered from stored
offsets. A search cut by the depth cap is a ``depth_cap`` gap on its entry point (``truncated``):
the paths it found are still the shortest, farther sinks are missing.

Grounding: the entry point (role ``entrypoint``, and once more as ``sink_registry:<digest>``: the
registry is not code, so the role carries it and a changed ``.kb/sinks.yaml`` changes the grounding
with the identity), what made it an entry point upstream (``entry_<role>``: the route's routers,
the event's registration), every further step (``step``), the step that calls the sink
(``sink_site``) and a first-party sink's definition (``sink``). Every payload field is a function
of these, as the invalidation gate requires.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kb_assets.core.callgraph.graph import call_graph
from kb_assets.core.extractors.base import Draft, Extraction, LocatedGrounding
from kb_assets.core.models import JSON, Gap, Grounding
from kb_assets.core.paths.entrypoints import EntryPoint, entry_points
from kb_assets.core.paths.search import Reached, search
from kb_assets.core.paths.sinks import GAP_SOURCE, SinkRegistry, SinkRule, sink_registry
from kb_assets.core.program import Program
from kb_assets.core.spans import ParsedSource


class ProcessPathsExtractor:
    """The ``process_paths`` asset's extractor (reads the call graph's facts; collects nothing)."""

    extractor_id = GAP_SOURCE
    version = "2"  # 2: answers inside resolution cycles no longer depend on the order (``guards``)
    facts_version = "0"
    kind = "process_path"
    asset_name = "process_paths"
    description = (
        "Shortest call chains from entry points (routes, events, CLI) to sinks (DB, HTTP, files, ...)."
    )
    upstream = ("call_edges", "api_routes", "event_handlers")
    positions = ("sink_offsets",)
    """Payload keys that place the path's sink sites inside its grounding spans (line offsets from
    a span's first line): they move when lines inside an unchanged span do (``kb_gates.history``)."""

    def collect(self, source: ParsedSource) -> JSON:
        """Nothing of its own: the call graph's facts are all it needs."""
        return None

    def resolve(self, program: Program) -> Extraction:
        """One draft per (entry point, sink reached), plus depth-cap and configuration gaps."""
        graph = call_graph(program)
        registry, gaps = sink_registry(program.config)
        memo: dict[tuple[str, str | None], SinkRule | None] = {}
        drafts: list[Draft] = []
        for entry in entry_points(program, graph):
            result = search(graph, entry, registry, memo)
            for sink in sorted(result.reached):
                drafts.append(_draft(program, entry, result.reached[sink], registry))
            if result.truncated:
                node = graph.nodes[entry.dotted]
                line = program.files[node.path].spans[node.span].start_line
                detail = (
                    f"truncated: the search from {entry.dotted} stopped at depth {registry.max_depth} "
                    f"(max_depth); sinks farther away are not reported"
                )
                gaps.append(Gap(node.path, "depth_cap", detail, line, GAP_SOURCE))
        return Extraction(drafts=tuple(drafts), gaps=tuple(gaps))

    def render(self, payload: Mapping[str, JSON], grounding: Sequence[LocatedGrounding]) -> dict[str, JSON]:
        """Replace ``sink_offsets`` by ``sink_lines`` (offsets from the sink site's first line)."""
        starts = {g.span_id: g.start_line for g in grounding if g.role == "sink_site"}
        offsets: Mapping[str, list[int]] = payload.get("sink_offsets", {})
        lines = sorted({starts[s] + o for s, offs in offsets.items() if s in starts for o in offs})
        return {**{k: v for k, v in payload.items() if k != "sink_offsets"}, "sink_lines": lines}


def _draft(program: Program, entry: EntryPoint, reached: Reached, registry: SinkRegistry) -> Draft:
    chain = reached.chain
    head = program.files[chain[0].path]
    grounding: list[Grounding] = [
        head.ground(chain[0].span, "entrypoint"),
        head.ground(chain[0].span, f"sink_registry:{registry.digest}"),
        *(Grounding(g.span_id, g.path, f"entry_{g.role}") for g in entry.grounding),
        *(program.files[d.path].ground(d.span, "step") for d in chain[1:]),
    ]
    offsets: dict[str, set[int]] = {}
    for path, span, offset in reached.sites:
        grounding.append(program.files[path].ground(span, "sink_site"))
        offsets.setdefault(program.files[path].spans[span].span_id, set()).add(offset)
    if reached.target is not None:
        grounding.append(program.files[reached.target.path].ground(reached.target.span, "sink"))
    payload: dict[str, JSON] = {
        "entrypoint": entry.dotted,
        "entry_kind": entry.kind,
        "entry_details": list(entry.details),
        "sink": reached.sink,
        "sink_category": reached.rule.category,
        "chain": [d.dotted for d in chain],
        "hops": len(chain) - 1,
        "sinks_digest": registry.digest,
        "sink_offsets": {sid: sorted(offs) for sid, offs in sorted(offsets.items())},
    }
    key = f"path:{entry.dotted}->{reached.sink}"
    return Draft(
        kind="process_path", logical_key=key, payload=payload, grounding=tuple(sorted(set(grounding)))
    )
