"""Work handed to a forked copy of this process, so that a second core shares a long computation.

Fork, not spawn: the work needs what this process already holds (a loaded program: ~140 MiB of
facts on Django, read and decoded over seconds), and a fork shares it copy-on-write in
milliseconds. That is safe only under the conditions ``fork`` checks: a POSIX fork on Linux, from
the main thread of a process with no other thread (a fork copies no other thread, and a lock
another thread held would stay held in the copy) but, once ``allow_dagster_threads`` was called,
Dagster's ``BYSTANDERS``, that is not itself a copy, with more than one core allowed. The copy
runs one function and leaves with ``os._exit``: no exit handler, finalizer or buffered output of
this process runs twice, and no inherited database connection is used or closed. Whoever forks
must get the same answer without the copy: when the copy fails, dies (killed for memory, say) or
cannot be made, there is no value and the caller does the work itself.

A copy may hand back several values (``fork_each``), each as soon as it has it: a copy doing the
work of several steps that take it one after the other made the first wait for all of it (on
warm Django commits the routes' and the event handlers' steps waited 0.10-0.34 s between them,
mean 0.21 s over 10 commits; 0.05 s so). The copy writes each ``(key, value)`` to an unlinked
temporary file as one pickle, then sends its length through a pipe; the parent reads the values
in that order with ``os.pread`` (the copy shares the file's offset and may still be writing), up
to the key it asks for. A value whose length arrived was written in full, so what came before a
failure stays good. ``fork`` is the one-value case.
"""

from __future__ import annotations

import os
import pickle
import signal
import struct
import sys
import tempfile
import threading
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import suppress
from functools import partial
from types import TracebackType
from typing import IO, Any, Generic, TypeVar

from kb_assets.core.collector import HELD_SIGNALS

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
C = TypeVar("C", bound="Streamed[Any, Any]")

_LENGTH = struct.Struct("<Q")
"""A value's length in bytes, as the copy sends it once the value is in the file."""

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


_settlers: list[Callable[[], None]] = []


def settle_before_fork(settle: Callable[[], None]) -> None:
    """Have ``can_fork`` call ``settle`` first: a function that waits for a thread of this
    process's own work to end (``kb_assets.indexing.predecode``), so that the thread neither
    stops a copy from being made nor runs beside one."""
    _settlers.append(settle)


def can_fork() -> bool:
    """Whether ``fork`` may make a copy now (module docstring), once the threads of this
    process's own work have ended (``settle_before_fork``)."""
    for settle in _settlers:
        settle()
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


class Streamed(Generic[K, V]):
    """A running copy, the file its values come in and the pipe their lengths come through; a
    context manager that stops and reaps the copy on the way out, whatever happened."""

    def __init__(self, pid: int, file: IO[bytes], notices: int) -> None:
        self._pid: int | None = pid
        self._file = file
        self._notices: int | None = notices
        self._offset = 0
        self._received: dict[K, V] = {}

    def get(self, key: K) -> V | None:
        """The copy's value for ``key`` (waiting for it), or None if the copy ended without it."""
        while key not in self._received and self._next():
            pass
        return self._received.get(key)

    def _next(self) -> bool:
        """Read the copy's next value; False when there is none (it ended: reaped here)."""
        header = self._read_notice()
        if header is None:
            self.stop()
            return False
        (length,) = _LENGTH.unpack(header)
        data = os.pread(self._file.fileno(), length, self._offset)
        self._offset += length
        # Written by a copy of this very process a moment ago, into a file nobody else can open.
        key, value = pickle.loads(data)  # noqa: S301
        self._received[key] = value
        return True

    def _read_notice(self) -> bytes | None:
        """The next length the copy sent, or None at the end of the pipe."""
        if self._notices is None:
            return None
        header = b""
        while len(header) < _LENGTH.size:
            chunk = os.read(self._notices, _LENGTH.size - len(header))
            if not chunk:
                return None  # a partial length (the copy died mid-write) is no value either
            header += chunk
        return header

    def __enter__(self: C) -> C:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop the copy if it still runs, reap it and drop the values not read yet (for a holder
        that outlives one ``with`` block); the values already read stay (``get``)."""
        pid, self._pid = self._pid, None
        if pid is not None:
            with suppress(ProcessLookupError):  # already gone: still to be reaped
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        notices, self._notices = self._notices, None
        if notices is not None:
            os.close(notices)
            self._file.close()


class Forked(Streamed[None, T]):
    """A copy that hands back one value (``fork``)."""

    def result(self) -> T | None:
        """The copy's value, or None if it failed or died; the copy is reaped."""
        value = self.get(None)
        self.stop()  # past its value the copy only leaves
        return value


def fork(work: Callable[[], T]) -> Forked[T] | None:
    """Start ``work`` in a forked copy of this process (``fork_each``, one value)."""
    return _started(partial(_one, work), Forked)


def fork_each(produce: Callable[[], Iterable[tuple[K, V]]]) -> Streamed[K, V] | None:
    """Run ``produce`` in a forked copy of this process, or None when ``can_fork`` says no; each
    ``(key, value)`` it yields can be had as soon as the copy has it (module docstring).

    Ctrl-C and SIGTERM are held (blocked) until the copy is made and known: CPython runs the
    ``os.register_at_fork`` callbacks (``logging``'s lock release) around a fork, and the
    ``KeyboardInterrupt`` a handler raises inside one is printed as "Exception ignored" and lost.
    A ``kb watch`` stopped while it forked the copy that writes its resolutions kept running (4
    of 18 stops, as ``tests/test_watch.py`` makes them, under load). The signals are those a full
    collection holds (``collector.HELD_SIGNALS``); one held here is handled once the copy is
    made, and the copy is then stopped and the caller sees the ``KeyboardInterrupt``."""
    return _started(produce, Streamed[K, V])


def _one(work: Callable[[], T]) -> Iterator[tuple[None, T]]:
    """``work``'s value as the one pair a ``Forked`` copy sends."""
    yield None, work()


def _started(
    produce: Callable[[], Iterable[tuple[Any, Any]]], holder: Callable[[int, IO[bytes], int], C]
) -> C | None:
    """``fork_each``'s copy, held by ``holder`` (made from its pid, file and pipe)."""
    if not can_fork():
        return None
    file = tempfile.TemporaryFile()  # noqa: SIM115 - handed to the holder, which closes it
    notices, write_end = os.pipe()
    unheld = signal.pthread_sigmask(signal.SIG_BLOCK, HELD_SIGNALS)
    try:
        pid = os.fork()
    except OSError:
        signal.pthread_sigmask(signal.SIG_SETMASK, unheld)
        file.close()
        os.close(notices)
        os.close(write_end)
        raise
    if pid == 0:  # pragma: no cover - the copy; coverage does not follow it
        signal.pthread_sigmask(signal.SIG_SETMASK, unheld)  # nothing is pending in a copy
        _run_copy(produce, file, notices, write_end)
    os.close(write_end)  # the copy's alone now: the pipe ends when the copy does
    copy = holder(pid, file, notices)
    try:
        signal.pthread_sigmask(signal.SIG_SETMASK, unheld)  # a held signal's handler runs here
    except BaseException:
        copy.stop()
        raise
    return copy


def _run_copy(
    produce: Callable[[], Iterable[tuple[Any, Any]]], file: IO[bytes], notices: int, write_end: int
) -> None:
    """The copy's whole life: each value into ``file`` and its length into the pipe, then out
    without any of the parent's clean-up. An exception, even ``KeyboardInterrupt``, ends here:
    the values sent so far stand, and the parent does the rest."""
    global _in_copy  # noqa: PLW0603 - this process is now the copy
    _in_copy = True
    os.close(notices)
    code = 1
    try:
        for item in produce():
            data = pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL)
            file.write(data)
            file.flush()
            os.write(write_end, _LENGTH.pack(len(data)))
        code = 0
    finally:
        os._exit(code)
