"""The call graph resolved in two parts at once, each in a forked copy of the process
(``kb_assets.core.forked``), their logs then replayed here, the earlier part's first.

Resolution is single-threaded and the largest step of an index run (Django: 181k call sites,
~2.2 s), while the second core idles. The parts need nothing from each other: a scope's edges do
not depend on which scopes were resolved before it (``tests/test_call_graph_order.py``), and the
one cross-scope rule, functions passed as arguments, is applied after both parts to their
parameter calls and arguments together. A copy hands back each file's log of what its scopes
did (``resolutions.FileLog``), and replaying the logs of both parts in path order is resolving
every scope in one pass: the graph is the one-pass graph, down to the order of edges, sites,
externals and nodes.

Both parts go to copies, rather than one to a copy and the other resolved here, for memory: the
evaluator's memos (~60-85 MiB on Django) then live and die in the copies, and this process only
ever holds the graph. Resolving a part here left its memos' freed memory in this process, whose
run peaked ~40 MiB higher for it (Django's full index: 571-573 -> 528-529 MiB, same wall time:
the copy that resolved here's part now pickles it, ~0.3 s, at the same time as the other).
"""

from __future__ import annotations

from collections.abc import Sequence

from kb_assets.core.callgraph.index import ScopeRef, Scopes

SHARE_MIN_SITES = 20_000
"""Below this many call sites (~0.25 s of resolution) a copy costs more than it saves."""

FIRST_SHARE = 0.5
"""The first part's share of the sites: both copies pickle their part, and the replay of the
second waits for whichever finishes last."""


def split(scopes: Scopes, refs: Sequence[ScopeRef]) -> int:
    """Where the copy's part starts: ``len(refs)`` (no copy) for a small program, else the first
    scope past ``FIRST_SHARE`` of the call sites (in resolution order)."""
    sizes = [len(scopes.record(ref).get("calls", ())) for ref in refs]
    total = sum(sizes)
    if total < SHARE_MIN_SITES:
        return len(refs)
    own, mine = FIRST_SHARE * total, 0
    for i, size in enumerate(sizes):
        mine += size
        if mine >= own:
            return i + 1
    return len(refs)  # pragma: no cover - the loop reaches ``own`` before the end
