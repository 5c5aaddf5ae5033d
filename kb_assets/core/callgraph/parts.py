"""The call graph resolved in two parts at once: the later scopes in a forked copy of the process
(``kb_assets.core.forked``), the earlier ones here, the copy's then replayed after this one's.

Resolution is single-threaded and the largest step of an index run (Django: 181k call sites,
~2.2 s), while the second core idles. The parts need nothing from each other: a scope's edges do
not depend on which scopes were resolved before it (``tests/test_call_graph_order.py``), and the
one cross-scope rule, functions passed as arguments, is applied after both parts to their
parameter calls and arguments together. The copy hands back each file's log of what its scopes
did (``resolutions.FileLog``), and replaying those logs after this process's own scopes is
resolving every scope in one pass: the graph is the one-pass graph, down to the order of edges,
sites, externals and nodes.
"""

from __future__ import annotations

from collections.abc import Sequence

from kb_assets.core.callgraph.index import ScopeRef, Scopes

SHARE_MIN_SITES = 20_000
"""Below this many call sites (~0.25 s of resolution) a copy costs more than it saves."""

OWN_SHARE = 0.55
"""This process's share of the sites: the copy also pickles its part (~0.3 s on Django's
45%), and the replay waits for whichever finishes last."""


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
