"""``collector.Reclaimer``: collections at the moments a long-running process is idle, of what it
allocated since the last one (the rest frozen) and of the whole heap after ``thaw_after`` commits; and
signals that arrive during one are not lost."""

from __future__ import annotations

import gc
import os
import signal
import weakref
from collections.abc import Iterator

import pytest

from kb_assets.core.collector import Reclaimer, paused_gc, signals_held


@pytest.fixture
def collector_off() -> Iterator[None]:
    """No collection but the ones the test makes (the collector stays enabled, as ``paused_gc``
    expects, with thresholds no test reaches)."""
    thresholds = gc.get_threshold()
    gc.set_threshold(1_000_000_000, 1_000, 1_000)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)


class _Node:
    """A garbage cycle's member."""

    def __init__(self) -> None:
        self.me = self


def _cycle() -> weakref.ref[_Node]:
    return weakref.ref(_Node())


def test_garbage_moved_by_a_pause_stays_until_the_reclaimer_collects_in_full(collector_off: None) -> None:
    """A cycle dropped before a pause goes to the oldest generation with everything else; the
    reclaimer collects it once the process is idle, after every ``every`` commits in a row, and not
    when no commit was indexed."""
    gc.collect()
    with paused_gc():
        lost = _cycle()
    gc.collect(1)  # what a young collection could do: nothing, the cycle is in the oldest generation
    assert lost() is not None
    with Reclaimer(every=3) as reclaimer:
        reclaimer.idle()
        assert lost() is not None  # nothing was indexed since the last collection
        reclaimer.indexed()
        reclaimer.idle()
        assert lost() is None
        later = _cycle()
        reclaimer.indexed()
        reclaimer.indexed()
        assert later() is not None
        reclaimer.indexed()  # the third in a row: collected on the way
        assert later() is None
        assert reclaimer.pending == 0
    assert gc.get_freeze_count() == 0


class _Held:
    """A part of a long-lived heap: holds a cycle until it is replaced."""

    def __init__(self) -> None:
        self.part: _Node | None = _Node()


def test_collections_examine_what_came_since_and_the_whole_heap_after_thaw_after_commits(
    collector_off: None,
) -> None:
    """What survives a collection is frozen: a cycle made afterwards is found by the next
    collection, but one among the frozen objects that becomes garbage (a replaced part of the kept
    heap) waits for the collection of the whole heap, after ``thaw_after`` commits; leaving the reclaimer
    thaws the heap."""
    gc.collect()
    held = _Held()
    with Reclaimer(thaw_after=3) as reclaimer:
        reclaimer.indexed()
        reclaimer.idle()  # the whole heap (nothing frozen yet), then frozen
        assert gc.get_freeze_count() > 0
        assert held.part is not None
        replaced = weakref.ref(held.part)
        held.part = None  # garbage now, among frozen objects
        fresh = _cycle()
        reclaimer.indexed()
        reclaimer.idle()  # what came since only
        assert fresh() is None
        assert replaced() is not None
        reclaimer.indexed()
        reclaimer.idle()  # the second in a row of what came since only
        assert replaced() is not None
        reclaimer.indexed()
        reclaimer.idle()  # the third: the whole heap
        assert replaced() is None
    assert gc.get_freeze_count() == 0


def test_a_pause_inside_a_frozen_heap_freezes_what_it_built(collector_off: None) -> None:
    """Within a reclaimer, what a pause built joins the frozen heap (no young collection examines
    it); outside one, it goes to the oldest generation and nothing stays frozen."""
    with paused_gc():
        kept = [_Held() for _ in range(100)]
    assert gc.get_freeze_count() == 0
    with Reclaimer() as reclaimer:
        reclaimer.indexed()
        reclaimer.idle()
        frozen = gc.get_freeze_count()
        with paused_gc():
            kept += [_Held() for _ in range(100)]
        assert gc.get_freeze_count() >= frozen + 200  # each _Held and its cycle's node
    assert gc.get_freeze_count() == 0
    assert len(kept) == 200


def test_a_signal_during_a_collection_reaches_its_handler_afterwards() -> None:
    """A ``KeyboardInterrupt`` raised inside a weak-reference callback of a collection is printed
    and lost: Ctrl-C is held for the collection and delivered once it ends, to the handler that
    was set."""
    reached: list[bool] = []

    def interrupted_while_held() -> None:
        with signals_held():
            os.kill(os.getpid(), signal.SIGINT)
            reached.append(True)  # not reached had the handler run on the next bytecode

    with pytest.raises(KeyboardInterrupt):
        interrupted_while_held()
    assert reached == [True]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_signal_that_arrives_inside_a_collection_stops_the_process_after_it(collector_off: None) -> None:
    """The reclaimer's collection runs a cycle's weak-reference callback that receives Ctrl-C; the
    interrupt comes out of ``collect`` instead of being swallowed by the collector."""
    node = _Node()
    keep = weakref.ref(node, lambda _ref: os.kill(os.getpid(), signal.SIGINT))
    del node
    with Reclaimer() as reclaimer:
        reclaimer.indexed()
        with pytest.raises(KeyboardInterrupt):
            reclaimer.idle()
        assert keep() is None
