"""Work handed to a forked copy of this process, so that a second core shares a long computation.

Fork, not spawn: the work needs what this process already holds (a loaded program: ~140 MiB of
facts on Django, read and decoded over seconds), and a fork shares it copy-on-write in
milliseconds. That is safe only under the conditions ``fork`` checks: a POSIX fork on Linux, from
the main thread of a process with no other thread (a fork copies no other thread, and a lock
another thread held would stay held in the copy) but, once ``allow_dagster_threads`` was called,
Dagster's ``BYSTANDERS``, that is not itself a copy, with more than one core allowed. The copy
runs one function, pickles its value into an unlinked temporary file and leaves with ``os._exit``: no exit
handler, finalizer or buffered output of this process runs twice, and no inherited database
connection is used or closed. Whoever forks must get the same answer without the copy: when the
copy fails, dies (killed for memory, say) or cannot be made, ``result`` is None and the caller does
the work itself.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import tempfile
import threading
from collections.abc import Callable
from contextlib import suppress
from functools import partial
from types import TracebackType
from typing import IO, Generic, Self, TypeVar

from kb_assets.core.collector import HELD_SIGNALS

T = TypeVar("T")

_workers = 0
"""The process's worker setting (``KB_WORKERS``): 0 for every allowed core, 1 for no copy."""
_in_copy = False


def set_workers(workers: int) -> None:
    """Follow the ``KB_WORKERS`` setting: 1 keeps every computation in this process."""
    global _workers  # noqa: PLW0603 - a process-wide setting, like the collector's thresholds
    _workers = workers


def cores() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


BYSTANDERS = frozenset({"termination-handler", "QueueFeederThread"})
"""The threads of the process a run executes in when Dagster's webserver or daemon launched it
(a ``multiprocessing`` child of the code server): ``termination-handler`` waits for a request to
stop the run, and the ``QueueFeederThread`` sends the run's events back to the code server. A copy
neither stops the run nor sends an event, so it never takes their locks, and it leaves through
``os._exit``, which joins neither."""

_beside_dagster = False
"""Whether ``BYSTANDERS`` may run beside a fork (``allow_dagster_threads``)."""


def allow_dagster_threads() -> None:
    """Let ``fork`` make copies beside Dagster's ``BYSTANDERS``: for the process of a run Dagster
    launched whose steps all execute in that process (``kb_assets.assets.launched``). Refusing them
    there resolved every UI- or sensor-launched run's call graph, and wrote its edges, on one core
    (``bench/ui_latency.py``). Not for the step processes of a multiprocess run, which have the
    same threads: allowed there, CI's ``kb index --processes 2`` runs exhausted the test server's
    connections, for a cause not found."""
    global _beside_dagster  # noqa: PLW0603 - process-wide, like the worker setting
    _beside_dagster = True


def can_fork() -> bool:
    """Whether ``fork`` may make a copy now (module docstring)."""
    allowed = _workers if _workers > 0 else cores()
    return sys.platform == "linux" and not _in_copy and allowed >= 2 and _alone()


def _alone() -> bool:
    """Whether this is the main thread and every other thread is an allowed bystander."""
    if threading.active_count() == 1:
        return True
    main = threading.main_thread()
    if not _beside_dagster or threading.current_thread() is not main:
        return False
    return all(thread is main or thread.name in BYSTANDERS for thread in threading.enumerate())


class Holder:
    """What holds a running copy: a context manager that stops and reaps the copy on the way
    out, whatever happened."""

    def stop(self) -> None:
        """Stop the copy if it still runs and reap it."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()


def reap(pid: int | None) -> None:
    """Stop the copy ``pid`` if it still runs, and reap it (nothing for None: already reaped)."""
    if pid is not None:
        with suppress(ProcessLookupError):  # already gone: still to be reaped
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


class Forked(Holder, Generic[T]):
    """A running copy and the file its value comes back in."""

    def __init__(self, pid: int, file: IO[bytes]) -> None:
        self._pid: int | None = pid
        self._file = file

    def result(self) -> T | None:
        """The copy's value once it has exited, or None if it failed or died."""
        pid, self._pid = self._pid, None
        if pid is None:
            return None
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            return None
        self._file.seek(0)
        # Written by a copy of this very process a moment ago, into a file nobody else can open.
        value: T = pickle.load(self._file)  # noqa: S301
        return value

    def stop(self) -> None:
        """Stop the copy if it still runs, reap it and drop its value (for a holder that outlives
        one ``with`` block)."""
        pid, self._pid = self._pid, None
        reap(pid)
        self._file.close()


def fork(work: Callable[[], T]) -> Forked[T] | None:
    """Start ``work`` in a forked copy of this process, or None when ``can_fork`` says no.

    Ctrl-C and SIGTERM are held (blocked) until the copy is made and known: CPython runs the
    ``os.register_at_fork`` callbacks (``logging``'s lock release) around a fork, and the
    ``KeyboardInterrupt`` a handler raises inside one is printed as "Exception ignored" and lost.
    A ``kb watch`` stopped while it forked the copy that writes its resolutions kept running (4
    of 18 stops, as ``tests/test_watch.py`` makes them, under load). The signals are those a full
    collection holds (``collector.HELD_SIGNALS``); one held here is handled once the copy is
    made, and the copy is then stopped and the caller sees the ``KeyboardInterrupt``."""
    if not can_fork():
        return None
    file = tempfile.TemporaryFile()  # noqa: SIM115 - handed to ``Forked``, which closes it
    try:
        pid, unheld = copy_running(partial(_run_copy, work, file))
    except BaseException:
        file.close()
        raise
    return known(Forked[T](pid, file), unheld)


Held = TypeVar("Held", bound=Holder)


def copy_running(life: Callable[[], None]) -> tuple[int, set[int | signal.Signals]]:
    """Fork a copy that lives ``life`` (which must end in ``os._exit``): its pid, and the signal
    mask to restore (``known``) once the caller holds the copy. ``HELD_SIGNALS`` stay held until
    then (``fork``)."""
    unheld = signal.pthread_sigmask(signal.SIG_BLOCK, HELD_SIGNALS)
    try:
        pid = os.fork()
    except OSError:
        signal.pthread_sigmask(signal.SIG_SETMASK, unheld)
        raise
    if pid == 0:  # pragma: no cover - the copy; coverage does not follow it
        signal.pthread_sigmask(signal.SIG_SETMASK, unheld)  # nothing is pending in a copy
        life()
    return pid, unheld


def known(copy: Held, unheld: set[int | signal.Signals]) -> Held:
    """``copy``, once the signals held while it was made are handled (``copy_running``); stopped
    if a handler raised."""
    try:
        signal.pthread_sigmask(signal.SIG_SETMASK, unheld)  # a held signal's handler runs here
    except BaseException:
        copy.stop()
        raise
    return copy


def enter_copy() -> None:
    """Mark this process as a copy: it makes no copy of its own (``can_fork``)."""
    global _in_copy  # noqa: PLW0603 - this process is now the copy
    _in_copy = True


def _run_copy(work: Callable[[], T], file: IO[bytes]) -> None:
    """The copy's whole life: the value into ``file``, then out without any of the parent's
    clean-up (exit code 0 only when the value was written in full)."""
    enter_copy()
    code = 1  # an exception, even KeyboardInterrupt, ends here: the parent redoes the work
    try:
        pickle.dump(work(), file, protocol=pickle.HIGHEST_PROTOCOL)
        file.flush()
        code = 0
    finally:
        os._exit(code)
