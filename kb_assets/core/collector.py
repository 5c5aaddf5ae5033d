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


_heap_frozen = False
"""Whether this process keeps what survives a collection frozen (``Reclaimer``). A flag, because
``gc.get_freeze_count`` walks every frozen object (~1.7M in a Django watch: tens of ms a call)."""


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
    collection of the whole heap too. In a process that keeps its heap frozen (``Reclaimer``) the
    survivors are frozen with it instead; the move is skipped when something else has frozen
    objects (``unfreeze`` would release them).

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
            if _heap_frozen:
                gc.freeze()
            elif gc.get_freeze_count() == 0:  # walks the frozen objects: none here
                gc.freeze()
                gc.unfreeze()
            gc.enable()


RECLAIM_EVERY = 5
"""Commits a long-running process indexes in a row (a watch catching up) before it collects in
full anyway: ~45 MiB of a Django commit's garbage at most, for ~0.2 s of collecting per commit."""

THAW_AFTER = 5
"""Commits indexed since the last collection of the whole heap after which the next collection is
one again (``Reclaimer``): what a watch left frozen in garbage cycles stays within the garbage of
as many commits as before (``RECLAIM_EVERY``)."""


class Reclaimer:
    """Collections for a process that indexes commit after commit, at the moments nobody waits for
    it, of what it allocated since the last one; a context manager, within which the process keeps
    its heap frozen.

    A Django commit indexed by ``kb watch`` left ~20k objects in garbage cycles (~9 MiB), which
    ``paused_gc`` had moved to the oldest generation where no collection came on its own: the
    watch grew from 437 MiB after its first commit to 1,660 MiB after 140. A collection is not
    made on a commit's way to its snapshot but after it: when the process goes idle (``idle``) and
    every ``every`` commits in a row (``indexed``).

    A full collection examines Django's ~1.7M tracked objects (0.8-1.8 s of the watch's CPU after
    every commit until stop 45, depending on the hour), though nearly all of them are the heap
    that lives from commit to commit. So what survives a collection is frozen (``gc.freeze``: the
    collector no longer examines it; what ``paused_gc`` keeps joins it) and the next collections
    examine only what came since: 7-30 ms. Cycles among frozen objects that later become garbage
    (a replaced part of the kept heap, the garbage of a Dagster run that a pause froze; ~10k
    objects a Django commit) are found only when the heap is thawed: the first collection after
    ``thaw_after`` commits examines the whole heap again. A watch whose commits come one at a time
    collects in full after every fifth instead of after each; one that catches up collects in full
    every ``every`` commits, as before. Leaving the context thaws the heap.
    """

    def __init__(self, every: int = RECLAIM_EVERY, thaw_after: int = THAW_AFTER) -> None:
        self.every = every
        self.thaw_after = thaw_after
        self.pending = 0
        """Commits indexed since the last collection."""
        self.unthawed = 0
        """Commits indexed since the last collection of the whole heap."""

    def __enter__(self) -> Reclaimer:
        return self

    def __exit__(self, *exc: object) -> None:
        _thaw()

    def indexed(self) -> None:
        """A commit was indexed (published or not: a failed run leaves garbage too)."""
        self.pending += 1
        self.unthawed += 1
        if self.pending >= self.every:
            self.collect()

    def idle(self) -> None:
        """The process waits for work: collect if a commit was indexed since the last time."""
        if self.pending:
            self.collect()

    def collect(self) -> int:
        """A collection now, of the whole heap after ``thaw_after`` commits (Ctrl-C and SIGTERM
        held until it ends: ``signals_held``), and what survives frozen; the number of
        unreachable objects it found."""
        global _heap_frozen  # noqa: PLW0603 - one flag per process, as the collector is one
        self.pending = 0
        with signals_held():
            if not _heap_frozen or self.unthawed >= self.thaw_after:
                _thaw()
                self.unthawed = 0
            found = gc.collect()
            gc.freeze()
            _heap_frozen = True
            return found


def _thaw() -> None:
    """Give the frozen heap back to the collector (the oldest generation)."""
    global _heap_frozen  # noqa: PLW0603 - see ``Reclaimer.collect``
    if _heap_frozen:
        gc.unfreeze()
        _heap_frozen = False


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
