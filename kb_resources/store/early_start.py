"""The embedded server started in a thread while a command imports what it needs.

A ``kb`` command that opens the store spends its first ~0.4 s importing its modules (SQLAlchemy,
Dagster, the command's own) on one core, and only then starts the embedded server: ~0.12 s, most
of it pg_ctl waiting for the server to accept connections, with nothing else to do. ``kb`` now
calls ``start_soon`` first thing: a thread imports ``embedded`` and starts the server while the
main thread imports, and ``EmbeddedServer.start`` takes that handle (``take``) instead of
starting the server itself.

This module imports nothing heavy, so the thread exists at once. A data directory that holds no
server yet is left to ``start``: its initdb takes seconds, which a command with a mistyped flag
should not pay. A handle no ``start`` takes (the command failed before it opened the store) is
given back by ``settle``, which ``kb`` calls when its command returns, after the start under way
has finished, so no server is left behind; and at exit, for any other caller. (At exit alone was
not enough: a start still running while the interpreter shut down could fail after the server
was up, and leave it running with this process's pid registered.)
"""

from __future__ import annotations

import atexit
import contextlib
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kb_resources.store.embedded import EmbeddedServer

EXIT_WAIT_S = 120.0
"""How long the exit waits for a start under way (a first start after a crash repairs files)."""

_starts: dict[Path, Future[EmbeddedServer]] = {}
"""Starts under way or done and not taken yet, by resolved data directory."""


def start_soon(pgdata: Path) -> None:
    """Start the server of ``pgdata`` in a thread, if the directory holds one already."""
    pgdata = pgdata.expanduser().resolve()
    if pgdata in _starts or not (pgdata / "PG_VERSION").is_file():
        return
    future: Future[EmbeddedServer] = Future()
    _starts[pgdata] = future
    threading.Thread(target=_start, args=(pgdata, future), name="kb-store-start", daemon=True).start()


def take(pgdata: Path) -> Future[EmbeddedServer] | None:
    """The start ``start_soon`` made for ``pgdata`` (resolved), handed over once."""
    return _starts.pop(pgdata, None)


def _start(pgdata: Path, future: Future[EmbeddedServer]) -> None:
    """The thread: the embedded server's module imported here, its handle (or failure) kept."""
    try:
        from kb_resources.store.embedded import EmbeddedServer

        future.set_result(EmbeddedServer.start_now(pgdata))
    except BaseException as exc:
        future.set_exception(exc)


def settle() -> None:
    """Wait for each start not taken, then give its handle back (the last one stops the server).
    A start that failed holds no handle."""
    for pgdata in list(_starts):
        future = _starts.pop(pgdata)
        with contextlib.suppress(Exception):
            future.result(timeout=EXIT_WAIT_S).release()


atexit.register(settle)  # at import, before the store's own exit hooks: it runs after them
