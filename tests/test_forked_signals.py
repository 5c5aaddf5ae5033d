"""A Ctrl-C that arrives while ``forked.fork`` makes a copy is not lost.

CPython runs ``os.register_at_fork`` callbacks around a fork (``logging`` releases its lock in
one), and a ``KeyboardInterrupt`` raised inside such a callback is printed as "Exception ignored"
and dropped: a ``kb watch`` stopped at that moment kept running. Here a callback sends the process
SIGINT at exactly that point, in a spawned process (a copy is made only from a process with one
thread, and the callback must not outlive the test)."""

from __future__ import annotations

import os
import signal
import time
from functools import partial
from pathlib import Path

from kb_assets.core import forked
from tests.spawned import run_spawned


def _mark_later(marker: str) -> None:
    time.sleep(0.5)
    Path(marker).write_text("the copy ran to its end")


def _interrupted_while_forking(marker: str) -> tuple[bool, bool, bool]:
    """Fork a copy that marks a file after 0.5 s, with SIGINT sent from inside the fork; whether
    the caller saw ``KeyboardInterrupt``, whether the handler was as before, whether the copy ran
    to its end (it should have been stopped)."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    armed = [True]

    def interrupt() -> None:
        if armed and armed.pop():
            os.kill(os.getpid(), signal.SIGINT)

    os.register_at_fork(after_in_parent=interrupt)
    interrupted = False
    try:
        forked.fork(partial(_mark_later, marker))
    except KeyboardInterrupt:
        interrupted = True
    time.sleep(1.5)
    unchanged = signal.getsignal(signal.SIGINT) is signal.default_int_handler and not signal.pthread_sigmask(
        signal.SIG_BLOCK, []
    )
    return interrupted, unchanged, Path(marker).exists()


def test_a_ctrl_c_while_a_copy_is_forked_reaches_the_caller_and_stops_the_copy(tmp_path: Path) -> None:
    """The interrupt is raised where ``fork`` was called, once the copy is made, and the copy is
    stopped before it finishes; no signal stays blocked."""
    interrupted, unchanged, finished = run_spawned(_interrupted_while_forking, str(tmp_path / "marker"))
    assert interrupted
    assert unchanged
    assert not finished


def test_a_copy_made_without_a_signal_runs_as_before(tmp_path: Path) -> None:
    """With no signal, the copy's value comes back and nothing stays blocked."""
    assert run_spawned(_forked_value) == (42, True)


def _forked_value() -> tuple[int | None, bool]:
    copy = forked.fork(lambda: 42)
    assert copy is not None
    with copy:
        value = copy.result()
    return value, not signal.pthread_sigmask(signal.SIG_BLOCK, [])
