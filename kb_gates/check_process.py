"""The checks' own process: pandera and polars live there, not in the index run.

A ``kb`` process that imported polars and validated one frame carried ~65 MiB more resident
memory for the rest of its life (measured with polars 2.1 on this machine: 34 MiB at import, 32
more at the first validation, nearly all of it pages of polars' 177 MB library, not data), and
that was a large part of an index run's peak, reached later in the call-edge step. So the run's
process spawns one helper at the start of an index run (``start``), while Dagster is still being
imported, and each frame check streams its rows to it batch by batch: rows in, ``(checked,
errors)`` back (``frame_errors``). The run's process never imports ``kb_gates.frames``.

The helper is spawned, not forked: the run has database connections and, by then, threads. It
inherits the run's blocked imports (``kb_assets.cli.process.skip_unused_imports`` makes them
``None`` in ``sys.modules``), ignores Ctrl-C (the run handles it) and leaves when the run's end of
the pipe closes. When it cannot be started (a daemonic process may have no children) or dies, the
frame is validated in the checking process, as before, to the same answer: its rows are read again
(``frame_errors`` takes a function that reads them, not the rows).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import NamedTuple, cast

Rows = Sequence[tuple[object, ...]]
"""One batch of a frame's rows, as the store's reads give them."""
ReadRows = Callable[[], Iterable[Rows]]
"""Reads a frame's rows batch by batch; called again if the helper fails midway."""

_END = None
"""Sent after a frame's last batch."""


def _serve(conn: Connection, blocked: tuple[str, ...]) -> None:
    """The helper's whole life: one frame after another until the run's end of the pipe closes.
    Ctrl-C reaches the whole process group: the run handles it, and this process leaves with it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for name in blocked:
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]  # as blocked in the run's process
    from kb_gates.frames import row_errors

    while True:
        try:
            frame, ordered_unique = conn.recv()
        except EOFError:
            return
        batches = _received(conn)
        try:
            answer: tuple[str, object] = ("ok", row_errors(frame, batches, ordered_unique=ordered_unique))
        except Exception as err:
            answer = ("failed", f"{type(err).__name__}: {err}")
        for _ in batches:  # a failure midway: the rest of the frame's batches still come
            pass
        conn.send(answer)


def _received(conn: Connection) -> Iterable[Rows]:
    """The batches of one frame as they arrive, up to ``_END``."""
    while (rows := conn.recv()) is not _END:
        yield rows


class _Helper(NamedTuple):
    """A started helper: the process that started it (a forked copy inherits it, but does not
    own it), the helper process, and the starter's end of their pipe."""

    owner: int
    process: BaseProcess
    conn: Connection


class CheckProcess:
    """One helper process per ``kb`` process, shared by the checks' threads one frame at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._helper: _Helper | None = None

    def start(self) -> None:
        """Start the helper if it is not running (it imports pandera and polars meanwhile)."""
        with self._lock:
            self._running()

    def frame_errors(
        self, frame: str, read: ReadRows, *, ordered_unique: str | None = None
    ) -> tuple[int, list[str]]:
        """Rows checked and every way the ``frame`` named (``frames.FRAMES``) read by ``read``
        breaks its schema (``frames.row_errors``), validated by the helper or, without one, here."""
        with self._lock:
            helper = self._running()
            if helper is not None:
                try:
                    status, value = _validated(helper, frame, read(), ordered_unique)
                except (EOFError, OSError):
                    self._stop()  # the helper died: validated here below
                except BaseException:
                    self._stop()  # a read failed midway: the helper still waits for its rows
                    raise
                else:
                    if status != "ok":
                        raise RuntimeError(f"the {frame} frame check failed in its process: {value}")
                    checked, errors = cast("tuple[int, list[str]]", value)  # from ``row_errors``
                    return checked, errors
        from kb_gates.frames import row_errors

        return row_errors(frame, read(), ordered_unique=ordered_unique)

    def helper_pid(self) -> int | None:
        """The running helper's process id (None: none is running), for tests and diagnostics."""
        with self._lock:
            return self._helper.process.pid if self._helper is not None else None

    def stop(self) -> None:
        """Close the helper's pipe and reap it (it also leaves by itself when this process ends)."""
        with self._lock:
            self._stop()

    def _running(self) -> Connection | None:
        helper = self._helper
        if helper is not None and (helper.owner != os.getpid() or not helper.process.is_alive()):
            self._stop()
        if self._helper is None:
            self._helper = _spawned()
        return self._helper.conn if self._helper is not None else None

    def _stop(self) -> None:
        helper, self._helper = self._helper, None
        if helper is None or helper.owner != os.getpid():
            return  # a forked copy's inherited helper belongs to the process that started it
        helper.conn.close()
        helper.process.join(timeout=5)
        if helper.process.is_alive():
            helper.process.kill()
            helper.process.join()


def _validated(
    conn: Connection, frame: str, batches: Iterable[Rows], ordered_unique: str | None
) -> tuple[str, object]:
    """Stream ``batches`` to the helper and take its answer: ("ok", (checked, errors)), or
    ("failed", what went wrong there)."""
    conn.send((frame, ordered_unique))
    for rows in batches:
        conn.send(rows)
    conn.send(_END)
    answer: tuple[str, object] = conn.recv()
    return answer


def _spawned() -> _Helper | None:
    """A started helper, or None if it cannot be started (a daemonic process, such as a pool's
    worker, may not have children)."""
    if multiprocessing.current_process().daemon:
        return None
    ctx = multiprocessing.get_context("spawn")
    ours, theirs = ctx.Pipe()
    blocked = tuple(sorted(name for name, module in sys.modules.items() if module is None))
    process = ctx.Process(target=_serve, args=(theirs, blocked), name="kb-check-process", daemon=True)
    try:
        process.start()
    except OSError:
        ours.close()
        return None
    finally:
        theirs.close()
    return _Helper(os.getpid(), process, ours)


CHECK_PROCESS = CheckProcess()
"""The helper of this process (``start`` it early; the frame checks call ``frame_errors``)."""
