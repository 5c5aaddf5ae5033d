"""The embedded server's lifecycle and the store's failure modes as a user meets them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from kb_assets.core.errors import StoreUnavailableError
from kb_resources.store.embedded import EmbeddedServer
from kb_resources.store.engine import Store, open_store
from tests.conftest import SettingsFactory
from tests.storefixtures import live_postmasters

OPEN_REPOSITORY = """
import sys
from pathlib import Path
from kb_resources.settings import Settings
from kb_resources.store.engine import open_store
kb_home = Path(sys.argv[1])
with open_store(Settings(kb_home=kb_home, dagster_home=kb_home / "dagster"), "shared") as store:
    print(store.database)
"""

START_AND_DIE = """
import os, signal, sys
from pathlib import Path
from kb_resources.store.embedded import EmbeddedServer
server = EmbeddedServer.start(Path(sys.argv[1]))
print(server.pid, flush=True)
if sys.argv[2] == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
"""


def _select_one(uri: str) -> int:
    engine = sa.create_engine(uri)
    with engine.connect() as conn:
        value = int(conn.scalar(sa.text("SELECT 1")) or 0)
    engine.dispose()
    return value


def _handle_pids(pgdata: Path) -> list[int]:
    return list(json.loads((pgdata / ".handle_pids.json").read_text() or "[]"))


def _wait_until_dead(pid: int) -> None:
    """Wait (bounded) until ``pid`` is gone or a zombie; signal delivery is asynchronous."""
    for _ in range(1000):
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return
        except psutil.NoSuchProcess:
            return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} survived SIGKILL")


def _run_client(pgdata: Path, how: str) -> int:
    """Run a client process that starts the server and then exits (``exit``) or is SIGKILLed."""
    proc = subprocess.run(
        [sys.executable, "-c", START_AND_DIE, str(pgdata), how], check=False, capture_output=True, text=True
    )
    assert proc.returncode == (-signal.SIGKILL if how == "kill" else 0), proc.stderr
    return int(proc.stdout.split()[0])


def test_start_and_release_leave_no_postgres_process(tmp_path: Path) -> None:
    """Releasing the last handle stops the server, and a client process that just exits stops it too."""
    pgdata = tmp_path / "pg"
    server = EmbeddedServer.start(pgdata)
    assert live_postmasters(pgdata) == [server.pid]
    assert _select_one(server.uri()) == 1
    server.release()
    assert live_postmasters(pgdata) == []
    postmaster = _run_client(pgdata, "exit")
    assert live_postmasters(pgdata) == []
    assert not psutil.pid_exists(postmaster) or psutil.Process(postmaster).status() == psutil.STATUS_ZOMBIE


def test_the_last_release_stops_the_server_by_its_signal_or_else_by_pg_ctl(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last release asks the postmaster for a fast shutdown itself and returns once the
    server has removed its lock file (as pg_ctl waits for); when the signal cannot be sent,
    pg_ctl stops it."""
    pgdata = tmp_path / "pg"
    server = EmbeddedServer.start(pgdata)
    server.release()
    assert not (pgdata / "postmaster.pid").exists()
    assert live_postmasters(pgdata) == []

    def refused(pid: int, sig: int) -> None:
        raise PermissionError(pid, sig)

    server = EmbeddedServer.start(pgdata)
    monkeypatch.setattr(os, "kill", refused)
    server.release()
    assert not (pgdata / "postmaster.pid").exists()
    assert live_postmasters(pgdata) == []


def test_a_killed_client_does_not_pin_the_server(tmp_path: Path) -> None:
    """A client killed with SIGKILL leaves its pid in .handle_pids.json; the next start prunes it,
    so when that next client releases, the server stops instead of running forever."""
    pgdata = tmp_path / "pg"
    postmaster = _run_client(pgdata, "kill")
    assert live_postmasters(pgdata) == [postmaster]
    assert len(_handle_pids(pgdata)) == 1
    server = EmbeddedServer.start(pgdata)
    assert _handle_pids(pgdata) == [os.getpid()]
    server.release()
    assert live_postmasters(pgdata) == []


def test_a_killed_server_is_restarted_by_the_next_start(tmp_path: Path) -> None:
    """After the postmaster is SIGKILLed (leaving postmaster.pid and the socket lock behind, and a
    zombie where no init reaps it), the next start brings up a new server that answers queries."""
    pgdata = tmp_path / "pg"
    first = EmbeddedServer.start(pgdata)
    killed = first.pid
    os.kill(killed, signal.SIGKILL)
    _wait_until_dead(killed)
    second = EmbeddedServer.start(pgdata)
    assert second.pid != killed
    assert _select_one(second.uri()) == 1
    first.release()
    assert live_postmasters(pgdata) == [second.pid]  # the process still holds the second handle
    second.release()
    assert live_postmasters(pgdata) == []


def test_embedded_store_keeps_one_database_per_repository(settings_factory: SettingsFactory) -> None:
    """Without a URL, open_store starts the embedded server under KB_HOME/pg, creates kb_<repo_key>
    on first use, hands out a psycopg2 URL dagster-postgres accepts, and close() stops the server."""
    settings = settings_factory()
    with open_store(settings, "alpha") as first, open_store(settings, "beta") as second:
        assert (first.database, second.database) == ("kb_alpha", "kb_beta")
        url = first.dagster_storage_url()
        assert url.startswith("postgresql+psycopg2://postgres@/kb_alpha?host=")
        assert "&options=-csearch_path%3Ddagster%20-csynchronous_commit%3Doff" in url
        from dagster_postgres.run_storage import PostgresRunStorage

        storage = PostgresRunStorage(postgres_url=url)
        assert storage.get_runs() == []
        with storage._engine.connect() as dagster_conn:  # Dagster's sessions skip the flush wait ...
            assert dagster_conn.scalar(sa.text("SHOW synchronous_commit")) == "off"
        storage.dispose()
        with first.engine.connect() as conn:  # ... the knowledge store's own sessions do not
            assert conn.scalar(sa.text("SHOW synchronous_commit")) == "on"
            # and start the kernel's writeback as they write (the exit's checkpoint syncs less)
            assert conn.scalar(sa.text("SHOW backend_flush_after")) == "512kB"
        with first.engine.connect() as conn:
            query = "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'dagster'"
            assert conn.scalar(sa.text(query))
    assert live_postmasters(settings.kb_home / "pg") == []


def test_two_processes_opening_a_new_repository_at_once_both_succeed(tmp_path: Path) -> None:
    """Two first-time opens of the same repository race on starting the server, CREATE DATABASE and
    migrating; both succeed, and the server stops once both have exited."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", OPEN_REPOSITORY, str(tmp_path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(2)
    ]
    outcomes = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err for _, err in outcomes]
    assert [out.strip() for out, _ in outcomes] == [b"kb_shared", b"kb_shared"]
    assert live_postmasters(tmp_path / "pg") == []


@pytest.mark.parametrize(
    ("db_url", "shown"),
    [
        ("postgresql://kb:s3cret-pw@127.0.0.1:1/kb", "postgresql+psycopg://kb:***@127.0.0.1:1/kb"),
        ("postgresql://kb:s3cret-pw@/kb?host=/nonexistent/socket", "postgresql+psycopg://kb:***@/kb?host="),
        ("not a url with s3cret-pw", "the given database URL"),
        ("mysql://kb:s3cret-pw@localhost/kb", "mysql://kb:***@localhost/kb"),
    ],
)
def test_unreachable_or_bad_url_is_store_unavailable(
    db_url: str, shown: str, settings_factory: SettingsFactory
) -> None:
    """An unreachable server or a bad URL is one StoreUnavailableError line, password masked."""
    with pytest.raises(StoreUnavailableError) as caught:
        open_store(settings_factory(db_url=db_url), "test")
    message = str(caught.value)
    assert "s3cret-pw" not in message
    assert "\n" not in message
    assert caught.value.target.startswith(shown)
    assert caught.value.exit_code == 3


def test_read_only_store_rejects_writes(store: Store, settings_factory: SettingsFactory) -> None:
    """A read-only store (the MCP server's) opens every transaction read-only, so writes fail."""
    url = store.engine.url.render_as_string(hide_password=False)
    with open_store(settings_factory(db_url=url), "test", read_only=True) as reader:
        with reader.engine.connect() as conn:
            assert conn.scalar(sa.text("SHOW default_transaction_read_only")) == "on"
            with pytest.raises(sa_exc.InternalError, match="read-only transaction"):
                conn.execute(sa.text("INSERT INTO branch_ref VALUES ('main', repeat('a', 40), now())"))
        assert "default_transaction_read_only" not in reader.dagster_storage_url()


def test_a_store_named_by_url_keeps_its_servers_writeback_setting(store: Store) -> None:
    """``EMBEDDED_STORE_OPTION`` is for the embedded server only: a store given by URL (the test
    session's, here) keeps whatever its administrator set (PostgreSQL's default: off)."""
    with store.engine.connect() as conn:
        assert conn.scalar(sa.text("SHOW backend_flush_after")) == "0"
