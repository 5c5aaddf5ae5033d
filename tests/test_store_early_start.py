"""The embedded server started while a command imports (``early_start``): the start that follows
takes its handle, a fresh directory is left alone, and a handle nobody takes leaves no server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kb_assets.cli import main as cli_main
from kb_resources.store import early_start
from kb_resources.store.embedded import EmbeddedServer
from tests.kbfixtures import KbEnv
from tests.storefixtures import live_postmasters

START_SOON_AND_LEAVE = """
import sys
from pathlib import Path
from kb_resources.store import early_start
pgdata = Path(sys.argv[1]).resolve()
early_start.start_soon(pgdata)
print(early_start._starts[pgdata].result().pid, flush=True)
"""


def _initialized(tmp_path: Path) -> Path:
    """A data directory that holds a server (stopped), as any ``kb`` run leaves it."""
    pgdata = tmp_path / "pg"
    EmbeddedServer.start(pgdata).release()
    assert (pgdata / "PG_VERSION").is_file()
    return pgdata.resolve()


def _handle_pids(pgdata: Path) -> list[int]:
    return list(json.loads((pgdata / ".handle_pids.json").read_text() or "[]"))


def test_the_start_that_follows_takes_the_server_started_soon(tmp_path: Path) -> None:
    """One server, one handle of this process: the one the thread made, taken once."""
    pgdata = _initialized(tmp_path)
    early_start.start_soon(pgdata)
    ahead = early_start._starts[pgdata]
    server = EmbeddedServer.start(pgdata)
    try:
        assert ahead.result() is server
        assert early_start.take(pgdata) is None
        assert live_postmasters(pgdata) == [server.pid]
        assert _handle_pids(pgdata) == [os.getpid()]
    finally:
        server.release()
    assert live_postmasters(pgdata) == []


def test_a_directory_without_a_server_is_left_to_start(tmp_path: Path) -> None:
    """No initdb ahead of a command that may never open the store: nothing is started or made."""
    pgdata = (tmp_path / "pg").resolve()
    early_start.start_soon(pgdata)
    assert early_start.take(pgdata) is None
    assert not pgdata.exists()


def test_settle_gives_back_a_start_nobody_took(tmp_path: Path) -> None:
    """What ``kb`` does when its command returns: the untaken start is waited for and its handle
    given back, so the server it started stops and this process is no longer registered."""
    pgdata = _initialized(tmp_path)
    early_start.start_soon(pgdata)
    started = early_start._starts[pgdata]
    early_start.settle()
    assert started.result().pid > 0
    assert early_start.take(pgdata) is None
    assert live_postmasters(pgdata) == []
    assert _handle_pids(pgdata) == []


def test_a_start_nobody_takes_leaves_no_server_behind(tmp_path: Path) -> None:
    """A process that started the server soon and never opened the store gives the handle back
    at exit: the server it started stops, and no pid of it stays registered."""
    pgdata = _initialized(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-c", START_SOON_AND_LEAVE, str(pgdata)],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert int(proc.stdout.split()[0]) > 0
    assert live_postmasters(pgdata) == []
    assert _handle_pids(pgdata) == []


def test_a_kb_command_that_fails_before_the_store_leaves_no_server(tmp_path: Path) -> None:
    """``kb index`` on a path that is no repository starts the server soon, exits 2, and stops it.
    Three times: left to the exit alone, the start raced the interpreter's shutdown and left the
    server running about every other time."""
    home = tmp_path / "home"
    pgdata = _initialized(home)
    env = KbEnv(home=home, db_url="")  # no KB_DB_URL: the embedded store of KB_HOME
    for _ in range(3):
        result = env.kb_process("index", tmp_path / "nowhere")
        assert result.code == 2, result.stderr
        assert live_postmasters(pgdata) == []
        assert _handle_pids(pgdata) == []


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["status", "."], True),
        (["index", ".", "--full"], True),
        (["status", ".", "--db-url", "postgresql://x@/y"], False),
        (["status", ".", "--db-url=postgresql://x@/y"], False),
        (["ui", "."], False),
        ([], False),
    ],
)
def test_store_commands_start_the_embedded_server_soon(
    argv: list[str], expected: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Which command lines ask for the early start, and of which directory: KB_HOME's."""
    asked: list[Path] = []
    monkeypatch.setattr(early_start, "start_soon", asked.append)
    monkeypatch.setenv("KB_HOME", str(tmp_path))
    monkeypatch.delenv("KB_DB_URL", raising=False)
    cli_main._store_soon(argv)
    assert asked == ([tmp_path / "pg"] if expected else [])
    monkeypatch.setenv("KB_DB_URL", "postgresql://x@/y")
    cli_main._store_soon(argv)
    assert len(asked) == (1 if expected else 0)
