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
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

COLLECTOR_THRESHOLDS = (200_000, 20, 10)
"""Young-generation collections every 200k net allocations instead of 700; older generations
still run (every 4M and 40M allocations), but not in a process that indexes commit after commit:
see ``Reclaimer``."""


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
    collection of the whole heap too. Skipped when something else has frozen objects (``unfreeze``
    would release them).

    The move has a price: the young garbage of the time before the pause (cycles a Dagster run
    leaves: per-step namedtuple types, config snapshots, SQL expressions) goes to the oldest
    generation too, where only a full collection finds it, and ``gc.freeze`` sets the count of
    young allocations back to zero. A process that pauses on every commit (``kb watch``) never
    reaches the 200k allocations of a young collection, let alone a full one, and must collect
    itself: ``Reclaimer``.
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


RECLAIM_EVERY = 5
"""Commits a long-running process indexes in a row (a watch catching up) before it collects in
full anyway: ~45 MiB of a Django commit's garbage at most, for ~0.2 s of collecting per commit."""


class Reclaimer:
    """Full collections for a process that indexes commit after commit, at the moments nobody
    waits for it.

    A Django commit indexed by ``kb watch`` left ~20k objects in garbage cycles (~9 MiB), which
    ``paused_gc`` had moved to the oldest generation where no collection came on its own: the
    watch grew from 437 MiB after its first commit to 1,660 MiB after 140. A full collection of
    Django's ~1.5M tracked objects takes ~1.1 s, so it is not made on a commit's way to its
    snapshot but after it: when the process goes idle (``idle``) and every ``every`` commits in a
    row (``indexed``).
    """

    def __init__(self, every: int = RECLAIM_EVERY) -> None:
        self.every = every
        self.pending = 0
        """Commits indexed since the last full collection."""

    def indexed(self) -> None:
        """A commit was indexed (published or not: a failed run leaves garbage too)."""
        self.pending += 1
        if self.pending >= self.every:
            self.collect()

    def idle(self) -> None:
        """The process waits for work: collect if a commit was indexed since the last time."""
        if self.pending:
            self.collect()

    def collect(self) -> int:
        """A full collection now (Ctrl-C and SIGTERM held until it ends: ``signals_held``); the
        number of unreachable objects it found."""
        self.pending = 0
        with signals_held():
            return gc.collect()


HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def signals_held() -> Iterator[None]:
    """Within: SIGINT and SIGTERM are noted, and delivered to their handlers on the way out.

    A full collection runs finalizers and weak-reference callbacks (a ``WeakSet``'s, Dagster's),
    and the ``KeyboardInterrupt`` a handler raises inside one of them is printed as "Exception
    ignored" and lost: a watch stopped during its collection kept running. Only Python handlers
    are held, and only from the main thread, where handlers run and can be set."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted: list[int] = []

    def note(signum: int, _frame: FrameType | None) -> None:
        noted.append(signum)

    handlers = {sig: signal.getsignal(sig) for sig in HELD_SIGNALS}
    held = [sig for sig, handler in handlers.items() if callable(handler)]
    for sig in held:
        signal.signal(sig, note)
    try:
        yield
    finally:
        for sig in held:
            signal.signal(sig, handlers[sig])
        for signum in dict.fromkeys(noted):
            signal.raise_signal(signum)
