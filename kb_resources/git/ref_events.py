"""Waiting for a branch to move: woken by the kernel as the repository's refs change (Linux's
inotify), else by the clock alone.

``kb watch`` reads the branch tips every ``--interval``, so a commit waited half an interval on
average (0.1-0.125 s) before its run started. Git moves a branch by writing
``refs/heads/<name>.lock`` and renaming it over the ref, and rewrites ``packed-refs`` (or a
reftable's ``tables.list``) the same way, so a watch on the common git directory, on every
directory under ``refs/heads`` and on ``reftable`` sees each move as it lands. A wake-up only
means "read the tips now": the caller still compares them, and still reads them every interval,
so an event missed or a platform without inotify costs latency, never a commit.
"""

from __future__ import annotations

import ctypes
import os
import select
import struct
import sys
import time
from pathlib import Path
from types import TracebackType

from kb_resources.git.location import common_dir

_IN_MODIFY, _IN_CLOSE_WRITE, _IN_MOVED_FROM, _IN_MOVED_TO = 0x2, 0x8, 0x40, 0x80
_IN_CREATE, _IN_DELETE, _IN_Q_OVERFLOW, _IN_ISDIR = 0x100, 0x200, 0x4000, 0x40000000
_MASK = _IN_MODIFY | _IN_CLOSE_WRITE | _IN_MOVED_FROM | _IN_MOVED_TO | _IN_CREATE | _IN_DELETE
_EVENT = struct.Struct("iIII")
"""An inotify event's header: watch descriptor, mask, cookie, length of the name that follows."""
_LOCK, _PACKED = b".lock", b"packed-refs"


class RefEvents:
    """A wait that ends early when the refs of the repository at ``git_dir`` change.

    Use as a context manager (the inotify descriptor is closed on the way out). Where inotify is
    not available (another platform, no ``libc``, the per-user watch limit reached) ``watching`` is
    False and ``wait`` sleeps its whole timeout."""

    def __init__(self, git_dir: Path) -> None:
        self.common = common_dir(git_dir)
        self._libc: ctypes.CDLL | None = None
        self._fd = -1
        self._watched: dict[int, Path] = {}
        """Each watch descriptor's directory."""

    @property
    def watching(self) -> bool:
        """Whether ref changes wake ``wait`` (else it only sleeps)."""
        return self._fd >= 0

    def __enter__(self) -> RefEvents:
        if sys.platform.startswith("linux"):
            try:
                self._libc = ctypes.CDLL(None, use_errno=True)
                self._fd = self._libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
            except (OSError, AttributeError):
                self._fd = -1
            if self._fd >= 0 and not self._watch():
                self.close()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop watching (``wait`` then only sleeps)."""
        if self._fd >= 0:
            os.close(self._fd)
        self._fd = -1

    def wait(self, timeout: float) -> bool:
        """Sleep up to ``timeout`` seconds; True as soon as a ref changed (a ``.lock`` file coming
        and going is not a change), False when the time ran out."""
        if not self.watching:
            time.sleep(timeout)
            return False
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([self._fd], [], [], left)
            if ready and self._drained():
                return True
        return False

    def _directories(self) -> list[Path]:
        """Where a ref move shows: the common git dir (``packed-refs``), every directory under
        ``refs/heads``, and ``reftable`` when the repository uses one."""
        heads = self.common / "refs" / "heads"
        found = [self.common, *([heads] if heads.is_dir() else [])]
        found += sorted(p for p in heads.rglob("*") if p.is_dir()) if heads.is_dir() else []
        reftable = self.common / "reftable"
        return found + ([reftable] if reftable.is_dir() else [])

    def _watch(self) -> bool:
        """Add a watch on every directory of ``_directories`` (again: an existing one keeps its
        descriptor); False when the common directory itself cannot be watched."""
        assert self._libc is not None
        for path in self._directories():
            descriptor = self._libc.inotify_add_watch(self._fd, os.fsencode(path), _MASK)
            if descriptor >= 0:
                self._watched[descriptor] = path
            elif path == self.common:
                return False
        return True

    def _drained(self) -> bool:
        """Read every pending event; whether one was a ref change. In the common directory only
        ``packed-refs`` counts (the index and the other files git writes there do not); elsewhere
        any name but a lock file. A directory made under ``refs/heads`` is watched from now on."""
        changed = made = False
        while True:
            try:
                chunk = os.read(self._fd, 64 * 1024)
            except BlockingIOError:
                break
            at = 0
            while at + _EVENT.size <= len(chunk):
                descriptor, mask, _cookie, length = _EVENT.unpack_from(chunk, at)
                name = chunk[at + _EVENT.size : at + _EVENT.size + length].rstrip(b"\0")
                at += _EVENT.size + length
                where = self._watched.get(descriptor)
                if mask & _IN_Q_OVERFLOW:  # the kernel dropped events: any of them may have been one
                    changed = made = True
                elif where == self.common:
                    changed = changed or name == _PACKED
                elif where is not None and not name.endswith(_LOCK):
                    changed = True
                    made = made or bool(mask & _IN_ISDIR)
        if made:
            self._watch()
        return changed
