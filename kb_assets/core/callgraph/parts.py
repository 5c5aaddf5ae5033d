"""The call graph resolved in two parts at once: the later scopes in a forked copy of the process
(``kb_assets.core.forked``), the earlier ones here, then merged as if resolved in one pass.

Resolution is single-threaded and the largest step of an index run (Django: 181k call sites,
~2.2 s), while the second core idles. The parts need nothing from each other: a scope's edges do
not depend on which scopes were resolved before it (``tests/test_call_graph_order.py``), and the
one cross-scope rule, functions passed as arguments, is applied after the merge to the two parts'
parameter calls and arguments together. The merge replays what resolving the copy's scopes after
this process's own would have done to each field (``merge``), so the graph is the one-pass graph:
same edges in the same order, same sites, spans, forms and ``via`` sets, same externals, nodes
and counts. One order is not replayed: an edge whose sites lie in two definitions with the same
dotted path (a function defined twice) gets the copy's sites in its ``others`` list after this
process's, grouped by the copy's first definition; nothing reads that list's order but the
call-edge carry's signature, where another order only misses a reuse.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kb_assets.core.callgraph.index import ScopeRef, Scopes
from kb_assets.core.callgraph.values import Def, Span, union_spans

if TYPE_CHECKING:
    from kb_assets.core.callgraph.graph import CallGraph, Edge, ExternalSite
    from kb_assets.core.callgraph.passing import Passings

SHARE_MIN_SITES = 20_000
"""Below this many call sites (~0.25 s of resolution) a copy costs more than it saves."""

OWN_SHARE = 0.55
"""This process's share of the sites: the copy also pickles its part (~0.3 s on Django's
45%), and the merge waits for whichever finishes last."""


@dataclass(slots=True)
class Part:
    """What resolving some scopes into a fresh graph produced (the copy's answer)."""

    edges: dict[tuple[str, str], Edge]
    externals: dict[str, list[ExternalSite]]
    nodes: dict[str, Def]
    stats: Counter[str]
    calls: dict[tuple[str, int, str], list[tuple[Def, int, bool]]]
    arguments: dict[tuple[str, int, str], list[tuple[ScopeRef, str, frozenset[Span]]]]


def split(scopes: Scopes, refs: Sequence[ScopeRef]) -> int:
    """Where the copy's part starts: ``len(refs)`` (no copy) for a small program, else the first
    scope past ``OWN_SHARE`` of the call sites (in resolution order)."""
    sizes = [len(scopes.record(ref).get("calls", ())) for ref in refs]
    total = sum(sizes)
    if total < SHARE_MIN_SITES:
        return len(refs)
    own, mine = OWN_SHARE * total, 0
    for i, size in enumerate(sizes):
        mine += size
        if mine >= own:
            return i + 1
    return len(refs)  # pragma: no cover - the loop reaches ``own`` before the end


def merge(graph: CallGraph, passings: Passings, part: Part) -> None:
    """Add the copy's part to ``graph`` and ``passings`` as if its scopes had been resolved here,
    after this process's own (module docstring)."""
    edges = graph.edges
    for key, theirs in part.edges.items():
        mine = edges.get(key)
        if mine is None:
            edges[key] = theirs
            continue
        for span in theirs.callee_spans:
            if span not in mine.callee_spans:
                mine.callee_spans += (span,)
        mine.forms |= theirs.forms
        mine.via = union_spans(mine.via, theirs.via)
        mine.main = mine.main or theirs.main
        if (theirs.caller.path, theirs.caller.span) == (mine.caller.path, mine.caller.span):
            mine.offsets += theirs.offsets
            if theirs.others:
                mine.others = [*(mine.others or ()), *theirs.others]
        else:  # the same dotted caller defined twice, the copy's part first reaching the other one
            for site in theirs.sites:
                mine.add_site(*site)
    for dotted, node in part.nodes.items():
        graph.nodes.setdefault(dotted, node)
    for caller, sites in part.externals.items():
        graph.externals.setdefault(caller, []).extend(sites)
    graph.stats.update(part.stats)
    for param, calls in part.calls.items():
        passings.calls.setdefault(param, []).extend(calls)
    for param, arguments in part.arguments.items():
        passings.arguments.setdefault(param, []).extend(arguments)
