"""``collector.Reclaimer``: full collections at the moments a long-running process is idle, and
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
    reclaimer = Reclaimer(every=3)
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
    reclaimer = Reclaimer()
    reclaimer.indexed()
    with pytest.raises(KeyboardInterrupt):
        reclaimer.idle()
    assert keep() is None
