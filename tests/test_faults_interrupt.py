"""Ctrl-C during a run ends ``kb`` with one line, not a traceback, and publishes nothing."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
import sqlalchemy as sa

from kb_resources.store.target import parse_store_url
from tests.faultfixtures import (
    PUBLISH_BLOCKED,
    count,
    finish,
    hold_commit_row,
    spawn_kb,
    two_commit_repo,
    wait_until,
)
from tests.kbfixtures import KbEnv

PUBLISHED = "SELECT count(*) FROM commit_ref WHERE sha = :sha AND published_at IS NOT NULL"


@pytest.mark.parametrize("processes", [(), ("--processes", "2")], ids=["in-process", "multiprocess"])
@pytest.mark.parametrize("target", ["process", "group"])
def test_ctrl_c_inside_a_run_is_one_line_and_exit_130(
    kb_env: KbEnv, tmp_path: Path, target: str, processes: tuple[str, ...]
) -> None:
    """SIGINT while ``kb index`` waits inside its publishing transaction (Dagster turns it into its
    own interrupt error in the step): exit 130, the usual one line, and the commit unpublished.
    Sent to ``kb`` alone, and to its whole process group, as a terminal's Ctrl-C is: every helper
    process ``kb`` started gets it too, and none may print a traceback. Under the multiprocess
    executor the publish runs in a step process, which Dagster stops."""
    repo, (first, second) = two_commit_repo(tmp_path)
    assert kb_env.kb("index", repo, "--sha", first, "--no-verify").code == 0
    engine = sa.create_engine(parse_store_url(kb_env.db_url))
    holder = hold_commit_row(engine, repo, second)
    try:
        proc = spawn_kb(kb_env, "index", repo, "--sha", second, "--no-verify", *processes)
        wait_until(lambda: count(engine, PUBLISH_BLOCKED) > 0, "the publish to block", proc)
        if target == "group":
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(signal.SIGINT)
        code, _, err = finish(proc)
    finally:
        holder.rollback()
        holder.close()
    published = count(engine, PUBLISHED, sha=second)
    engine.dispose()
    assert code == 130, err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == "kb: interrupted; the store is unchanged by the unfinished step"
    assert published == 0
