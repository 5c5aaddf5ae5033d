"""Work handed to a forked copy of this process, so that a second core shares a long computation.

Fork, not spawn: the work needs what this process already holds (a loaded program: ~140 MiB of
facts on Django, read and decoded over seconds), and a fork shares it copy-on-write in
milliseconds. That is safe only under the conditions ``fork`` checks: a POSIX fork on Linux, a
process with one thread (a fork copies no other thread, and a lock another thread held would stay
held in the copy) that is not itself a copy, and more than one core allowed. The copy runs one
function, pickles its value into an unlinked temporary file and leaves with ``os._exit``: no exit
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
from types import TracebackType
from typing import IO, Generic, TypeVar

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


def can_fork() -> bool:
    """Whether ``fork`` may make a copy now (module docstring)."""
    allowed = _workers if _workers > 0 else cores()
    return sys.platform == "linux" and not _in_copy and allowed >= 2 and threading.active_count() == 1


class Forked(Generic[T]):
    """A running copy and the file its value comes back in; a context manager that stops and
    reaps the copy on the way out, whatever happened."""

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

    def __enter__(self) -> Forked[T]:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop the copy if it still runs, reap it and drop its value (for a holder that outlives
        one ``with`` block)."""
        pid, self._pid = self._pid, None
        if pid is not None:
            with suppress(ProcessLookupError):  # already gone: still to be reaped
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        self._file.close()


def fork(work: Callable[[], T]) -> Forked[T] | None:
    """Start ``work`` in a forked copy of this process, or None when ``can_fork`` says no."""
    if not can_fork():
        return None
    file = tempfile.TemporaryFile()  # noqa: SIM115 - handed to ``Forked``, which closes it
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the copy; coverage does not follow it
        _run_copy(work, file)
    return Forked(pid, file)


def _run_copy(work: Callable[[], T], file: IO[bytes]) -> None:
    """The copy's whole life: the value into ``file``, then out without any of the parent's
    clean-up (exit code 0 only when the value was written in full)."""
    global _in_copy  # noqa: PLW0603 - this process is now the copy
    _in_copy = True
    code = 1  # an exception, even KeyboardInterrupt, ends here: the parent redoes the work
    try:
        pickle.dump(work(), file, protocol=pickle.HIGHEST_PROTOCOL)
        file.flush()
        code = 0
    finally:
        os._exit(code)
