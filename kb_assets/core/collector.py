"""The cyclic garbage collector's thresholds for knowbase's own processes.

An index run (``kb``) and the MCP server's snapshot index both build large, long-lived, acyclic
heaps (a program's facts, symbol tables, a call graph; ~90k index entries). With the default
thresholds the collector re-traverses them again and again: on a Django one-file commit 16 full
collections took 13 of 30 CPU seconds, and the MCP server's first question about a Django commit
took 14.3 s instead of 7.4 s. The programs set these thresholds at start; a library caller of
``main`` keeps its own.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

COLLECTOR_THRESHOLDS = (200_000, 20, 10)
"""Young-generation collections every 200k net allocations instead of 700; older generations
still run (every 4M and 40M allocations), so a long ``kb watch`` keeps reclaiming cycles."""


def tune_collector() -> None:
    """Collect cyclic garbage rarely: the heaps knowbase builds are large, long-lived and acyclic."""
    gc.set_threshold(*COLLECTOR_THRESHOLDS)


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while a large heap is built: resolving a call graph, or
    indexing a snapshot for the MCP server, allocates hundreds of thousands of small, acyclic
    objects next to what the process holds, and each collection would examine them again (the
    thresholds above make collections rare, not absent: while the MCP server indexed Django's
    snapshot, ~30 young collections cost 0.5-0.7 of 5.0 s).

    On the way out, what survived (the graph, the drafts, the index) goes straight to the oldest
    generation (``gc.freeze`` then ``gc.unfreeze``, which moves objects without examining them):
    else the first allocation after resuming examines every one of them as a young object (about a
    second on Django), and again on their way up a generation, which soon triggers a full
    collection of the whole heap too. Garbage cycles made during the pause are still collected, by
    the next full collection. Skipped when something else has frozen objects (``unfreeze`` would
    release them).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()
