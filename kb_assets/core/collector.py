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

COLLECTOR_THRESHOLDS = (200_000, 20, 10)
"""Young-generation collections every 200k net allocations instead of 700; older generations
still run (every 4M and 40M allocations), so a long ``kb watch`` keeps reclaiming cycles."""


def tune_collector() -> None:
    """Collect cyclic garbage rarely: the heaps knowbase builds are large, long-lived and acyclic."""
    gc.set_threshold(*COLLECTOR_THRESHOLDS)
