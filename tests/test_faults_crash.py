"""Crash safety: a ``kb index`` killed with SIGKILL at any point loses nothing and shows nothing half-done.

One commit is indexed; a real ``kb index`` of the next commit is then killed at successive points
(while Dagster starts, once the commit's files are recorded, once extractors have staged
artifacts, and inside the publishing transaction). After every kill the earlier snapshot is
exactly what it was and the killed commit is invisible to ``kb export``, ``kb status`` and the MCP
server; finally a re-run publishes exactly the records (same ids) a clean run publishes.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from kb_mcp.answers.listing import list_answer
from kb_mcp.answers.resources import overview
from kb_mcp.context import open_context
from kb_resources.settings import Settings
from kb_resources.store.target import parse_store_url
from tests.faultfixtures import (
    PUBLISH_BLOCKED,
    Reference,
    count,
    export,
    hold_commit_row,
    kill_group,
    spawn_kb,
    wait_until,
)
from tests.kbfixtures import KbEnv

pytestmark = pytest.mark.slow
pytest_plugins = ["tests.faultrepo"]


def _nothing_half_done(kb_env: KbEnv, repo: Path, first: str, second: str, ref: Reference) -> None:
    """The first snapshot is intact; the second commit is published nowhere a reader looks."""
    assert export(kb_env, repo, first) == ref.exports[first]
    assert kb_env.kb("spans", repo, "--sha", first).stdout == ref.spans[first]
    missing = kb_env.kb("export", repo, "--sha", second)
    assert missing.code == 2, missing.stdout
    assert "not indexed" in missing.stderr
    status = kb_env.kb("status", repo, "--json").jsonl()[0]
    assert status["head_indexed"] == first
    assert status["indexed_commits"] == 1
    # what HEAD's newest snapshot exports: the first commit's, never a partial second
    assert kb_env.kb("export", repo).stdout == ref.exports[first]


def _mcp_sees_only(kb_env: KbEnv, repo: Path, first: str, ref: Reference) -> None:
    """A fresh MCP context reads the first snapshot and nothing of the killed one."""
    settings = Settings(kb_home=kb_env.home, dagster_home=kb_env.home / "dagster", db_url=kb_env.db_url)
    context = open_context(repo, settings)
    try:
        seen = overview(context)
        assert seen["newest_indexed"] == first
        assert seen["indexed_commits"] == 1
        listed = list_answer(context, kind=None, prefix=None, sha=None, limit=200, cursor=None)
        expected = sorted(line for line in ref.exports[first].splitlines())
        assert listed.sha == first
        assert listed.total == len(expected)
    finally:
        context.close()


def _knowbase_backends(engine: sa.Engine) -> int:
    """Busy server processes of knowbase clients on this database (an orphan after a kill); the
    test's own engine has no application name, and in-process ``kb`` connections are idle."""
    return count(
        engine,
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND application_name = 'knowbase' AND state <> 'idle'",
    )


def test_sigkill_at_every_phase_loses_nothing_and_the_rerun_matches(
    kb_env: KbEnv, fault_repo: tuple[Path, Reference]
) -> None:
    """Kill ``kb index`` of the second commit four times at later and later points, then re-run it."""
    repo, ref = fault_repo
    first, second = list(ref.exports)
    assert kb_env.kb("index", repo, "--sha", first, "--no-verify").code == 0
    engine = sa.create_engine(parse_store_url(kb_env.db_url))
    try:
        index = ("index", repo, "--sha", second, "--no-verify")

        # 1. while the process is still starting (Dagster imports, store opening)
        proc = spawn_kb(kb_env, *index)
        time.sleep(1.0)
        kill_group(proc)
        _nothing_half_done(kb_env, repo, first, second, ref)

        # 2. once the commit and its files are recorded (commit_tree committed)
        proc = spawn_kb(kb_env, *index)
        wait_until(
            lambda: count(engine, "SELECT count(*) FROM commit_file WHERE sha = :s", s=second) > 0,
            "the commit's files to be recorded",
            proc,
        )
        kill_group(proc)
        _nothing_half_done(kb_env, repo, first, second, ref)

        # 3. once an extractor has staged the commit's artifacts
        proc = spawn_kb(kb_env, *index)
        wait_until(
            lambda: count(engine, "SELECT count(*) FROM staged_entry WHERE sha = :s", s=second) > 0,
            "staged artifacts",
            proc,
        )
        kill_group(proc)
        _nothing_half_done(kb_env, repo, first, second, ref)

        # 4. inside the publishing transaction: snapshot rows written, not committed. The test
        # holds the commit row (FOR NO KEY UPDATE), so publish blocks on its final UPDATE.
        holder = hold_commit_row(engine, repo, second)
        try:
            proc = spawn_kb(kb_env, *index)
            wait_until(lambda: count(engine, PUBLISH_BLOCKED) > 0, "the publish to block", proc)
            _nothing_half_done(kb_env, repo, first, second, ref)  # readers never see the open publish
            kill_group(proc)
        finally:
            holder.close()
        # the orphaned server process finishes its statement, finds its client gone, rolls back
        wait_until(lambda: _knowbase_backends(engine) == 0, "the killed client's backends to end")
        assert count(engine, "SELECT count(*) FROM snapshot_entry WHERE sha = :s", s=second) == 0
        _nothing_half_done(kb_env, repo, first, second, ref)
        _mcp_sees_only(kb_env, repo, first, ref)

        # the re-run completes and publishes exactly what a clean run publishes
        rerun = kb_env.kb(*index)
        assert rerun.code == 0, rerun.stderr
        assert export(kb_env, repo, second) == ref.exports[second]
        assert kb_env.kb("spans", repo, "--sha", second).stdout == ref.spans[second]
        assert export(kb_env, repo, first) == ref.exports[first]
    finally:
        engine.dispose()
