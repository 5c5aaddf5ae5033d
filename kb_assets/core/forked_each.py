"""A forked copy that hands back several values, each as soon as it has it.

``forked.fork`` gives one value when the copy exits. A copy that does several pieces of work for
steps that take them one after the other (``kb_assets.indexing.prefetch``) made the first step
wait for all of them: on warm Django commits the routes' and the event handlers' steps waited
0.10-0.34 s between them (mean 0.21 s over 10 commits; 0.05 s so) for work their copies did
after theirs. Here the copy writes each ``(key, value)`` to the
file as one pickle and then tells the parent its length through a pipe; the parent reads the
values in that order, with ``os.pread`` (the copy shares the file's offset and is still
writing), up to the key it asks for. A value whose length arrived was written in full, so what
came before a failure stays good; a key that never came (the copy failed or died first) is None,
and the caller does that work itself, as with ``fork``.
"""

from __future__ import annotations

import os
import pickle
import struct
import tempfile
from collections.abc import Callable, Hashable, Iterable
from functools import partial
from typing import IO, Generic, TypeVar

from kb_assets.core import forked

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

_LENGTH = struct.Struct("<Q")
"""A value's length in bytes, as the copy sends it once the value is in the file."""


class Streamed(forked.Holder, Generic[K, V]):
    """A running copy, the file its values come in and the pipe their lengths come through."""

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

    def stop(self) -> None:
        """Stop the copy if it still runs, reap it and drop its values not yet read; the values
        already read stay (``get``)."""
        pid, self._pid = self._pid, None
        forked.reap(pid)
        notices, self._notices = self._notices, None
        if notices is not None:
            os.close(notices)
            self._file.close()


def fork_each(produce: Callable[[], Iterable[tuple[K, V]]]) -> Streamed[K, V] | None:
    """Run ``produce`` in a forked copy (as ``forked.fork`` does, under the same conditions); each
    ``(key, value)`` it yields can be had as soon as the copy has it."""
    if not forked.can_fork():
        return None
    file = tempfile.TemporaryFile()  # noqa: SIM115 - handed to ``Streamed``, which closes it
    notices, write_end = os.pipe()
    try:
        pid, unheld = forked.copy_running(partial(_run_copy, produce, file, notices, write_end))
    except BaseException:
        file.close()
        os.close(notices)
        raise
    finally:
        os.close(write_end)  # the copy's alone now: the pipe ends when the copy does
    return forked.known(Streamed[K, V](pid, file, notices), unheld)


def _run_copy(
    produce: Callable[[], Iterable[tuple[K, V]]], file: IO[bytes], notices: int, write_end: int
) -> None:
    """The copy's whole life: each value into ``file`` and its length into the pipe, then out
    without any of the parent's clean-up (``forked._run_copy``)."""
    forked.enter_copy()
    os.close(notices)
    code = 1  # an exception ends here: the values sent so far stand, the parent does the rest
    try:
        for item in produce():
            data = pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL)
            file.write(data)
            file.flush()
            os.write(write_end, _LENGTH.pack(len(data)))
        code = 0
    finally:
        os._exit(code)
