"""Concurrency: writers of one commit take turns, parallel runs agree, readers never see a mix.

- Store level (deterministic): two transactions replacing the same commit's rows (files, staged
  entries, gaps, the snapshot) used to interleave into a duplicate-key error; now the second waits
  for the first (a per-commit advisory lock) and rewrites the same rows.
- Process level: on a fresh database, ``kb index`` of the second commit, ``kb watch --once`` (the
  sensor's logic, which picks the same tip) and ``kb index`` of the first commit run at once; all
  succeed and publish exactly what clean sequential runs publish, and the sensor then requests
  nothing for a commit the CLI published.
- Readers: MCP answers taken while an index publishes are all the old snapshot or all the new one.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

import dagster as dg
import pytest
import sqlalchemy as sa

from kb_assets.core.models import Gap, Grounding
from kb_assets.sensors import branch_sensor
from kb_mcp.answers.listing import list_answer
from kb_mcp.answers.resources import overview
from kb_mcp.branch import RECHECK_S
from kb_mcp.context import ServeContext, open_context
from kb_resources.resources import KnowbaseResource
from kb_resources.settings import Settings
from kb_resources.store import reads, writes
from kb_resources.store.engine import Store
from kb_resources.store.target import parse_store_url
from tests.faultfixtures import (
    PUBLISH_BLOCKED,
    Reference,
    count,
    finish,
    hold_commit_row,
    query,
    spawn_kb,
    wait_until,
)
from tests.kbfixtures import KbEnv
from tests.storefixtures import grounded, publish, seed_commit, sha_of, span

pytest_plugins = ["tests.faultrepo"]

SHA = sha_of("c1")
ALPHA, BETA = span("alpha", 1, 3), span("beta", 5, 9)
ITEM = grounded("call:alpha", [Grounding(ALPHA.span_id, "m.py", "caller")])
WAITING = (
    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
)
FILES = [("m.py", sha_of(f"blob:m.py:{SHA}"), "regular", 10, None, False)]

Write = Callable[[sa.Connection], object]

WRITES: dict[str, Write] = {
    "publish": lambda conn: publish(conn, SHA, [ITEM]),
    "files": lambda conn: writes.replace_commit_files(conn, SHA, FILES),
    "gaps": lambda conn: writes.replace_gaps(conn, SHA, "parse", [Gap("n.py", "syntax_error", "x", 3)]),
}


@pytest.mark.parametrize("name", sorted(WRITES))
def test_two_writers_of_one_commit_take_turns(store: Store, name: str) -> None:
    """The second transaction waits on the commit's lock while the first is open, then rewrites
    the same rows without a duplicate-key error; the result is what one writer leaves."""
    write = WRITES[name]
    with store.engine.begin() as conn:
        seed_commit(conn, SHA, {"m.py": [ALPHA, BETA]})
        publish(conn, SHA, [ITEM])
        writes.replace_gaps(conn, SHA, "parse", [Gap("n.py", "syntax_error", "x", 3)])
    errors: list[BaseException] = []

    def second() -> None:
        try:
            with store.engine.begin() as conn:
                write(conn)
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)

    with store.engine.connect() as first:
        write(first)
        thread = threading.Thread(target=second)
        thread.start()
        try:
            wait_until(lambda: count(store.engine, WAITING) == 1, "the second writer to wait")
        finally:
            first.commit()
            thread.join(timeout=60)
    assert not thread.is_alive()
    assert not errors, errors
    with store.engine.connect() as conn:
        assert [r.artifact_id for r in reads.snapshot_records(conn, SHA)] == [ITEM.artifact_id]
        assert [(g.path, g.reason) for g in reads.gaps(conn, SHA)] == [("n.py", "syntax_error")]
        assert sorted(f.path for f in reads.commit_files(conn, SHA)) == ["m.py"]


@pytest.mark.slow
def test_parallel_runs_of_one_branch_agree_and_the_sensor_adds_nothing(
    kb_env: KbEnv, fault_repo: tuple[Path, Reference], tmp_path: Path
) -> None:
    """Three real processes start at once on a never-used database (so they also race on creating
    the schema and Dagster's tables): ``kb index`` of the tip, ``kb watch --once`` (which indexes
    the same tip) and ``kb index`` of its parent. All exit 0 and every snapshot is the clean one."""
    repo, ref = fault_repo
    first, second = list(ref.exports)
    procs = [
        spawn_kb(kb_env, "index", repo, "--sha", second, "--no-verify"),
        spawn_kb(kb_env, "watch", repo, "--once"),
        spawn_kb(kb_env, "index", repo, "--sha", first, "--no-verify"),
    ]
    outcomes = [finish(p) for p in procs]
    assert [code for code, _, _ in outcomes] == [0, 0, 0], [err for _, _, err in outcomes]
    tip_summary = outcomes[0][1].splitlines()[0]
    assert tip_summary.startswith(f"indexed {second[:12]} ")
    for sha in (first, second):
        assert kb_env.kb("export", repo, "--sha", sha).stdout == ref.exports[sha]
        assert kb_env.kb("spans", repo, "--sha", sha).stdout == ref.spans[sha]
    engine = sa.create_engine(parse_store_url(kb_env.db_url))
    try:
        assert count(engine, "SELECT count(*) FROM commit_ref WHERE published_at IS NOT NULL") == 2
        assert query(engine, "SELECT name, sha FROM branch_ref") == [("main", second)]
    finally:
        engine.dispose()
    again = kb_env.kb("watch", repo, "--once")
    assert again.code == 0, again.stderr
    assert not again.stdout.startswith("indexed")
    resource = KnowbaseResource(
        repo=str(repo),
        kb_home=str(kb_env.home),
        dagster_home=str(kb_env.home / "dagster"),
        db_url=kb_env.db_url,
    )
    (tmp_path / "sensor").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp_path / "sensor")) as instance:
        context = dg.build_sensor_context(instance=instance, cursor=None, resources={"kb": resource})
        result = branch_sensor(context)
    assert isinstance(result, dg.SensorResult)
    assert list(result.run_requests or []) == []


Answer = tuple[str, object]
"""One MCP answer reduced to what must be consistent: the commit it names and what it shows."""


def _answers(context: ServeContext) -> list[Answer]:
    """Two independent MCP readings: list_knowledge's (sha, ids) and the overview's (sha, counts)."""
    listed = list_answer(context, kind=None, prefix=None, sha=None, limit=200, cursor=None)
    seen = overview(context)
    return [
        (listed.sha, frozenset(item.artifact_id for item in listed.items)),
        (seen["newest_indexed"], dict(seen["counts"])),
    ]


def _expected(ref: Reference, sha: str) -> list[Answer]:
    records = [json.loads(line) for line in ref.exports[sha].splitlines()]
    counts: dict[str, int] = {}
    for record in records:
        counts[record["kind"]] = counts.get(record["kind"], 0) + 1
    return [(sha, frozenset(r["artifact_id"] for r in records)), (sha, counts)]


@pytest.mark.slow
def test_mcp_readers_see_the_old_or_the_new_snapshot_never_a_mix(
    kb_env: KbEnv, fault_repo: tuple[Path, Reference]
) -> None:
    """Eight reader threads query the MCP answers without pause while a real ``kb index`` of the
    next commit runs; the publish is held open for a while (the test holds the commit row), so
    readers certainly read during it. Every answer is exactly the first or the second snapshot."""
    repo, ref = fault_repo
    first, second = list(ref.exports)
    assert kb_env.kb("index", repo, "--sha", first, "--no-verify").code == 0
    old, new = _expected(ref, first), _expected(ref, second)
    settings = Settings(kb_home=kb_env.home, dagster_home=kb_env.home / "dagster", db_url=kb_env.db_url)
    context = open_context(repo, settings)
    engine = sa.create_engine(parse_store_url(kb_env.db_url))
    answers: list[Answer] = []
    errors: list[BaseException] = []
    stop = threading.Event()

    def reader() -> None:
        try:
            while not stop.is_set():
                answers.extend(_answers(context))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(8)]
    holder = hold_commit_row(engine, repo, second)
    try:
        for thread in threads:
            thread.start()
        proc = spawn_kb(kb_env, "index", repo, "--sha", second, "--no-verify")
        wait_until(lambda: count(engine, PUBLISH_BLOCKED) > 0, "the publish to block", proc)
        during = len(answers)
        wait_until(lambda: len(answers) > during + 20, "readers to read during the open publish")
        released = len(answers)
        holder.rollback()
        code, _, err = finish(proc)
        assert code == 0, err
        time.sleep(RECHECK_S)  # the MCP side sees a new snapshot within RECHECK_S of its publish
        after = len(answers)
        wait_until(lambda: len(answers) > after + 20, "readers to read after the publish")
    finally:
        stop.set()
        holder.close()
        for thread in threads:
            thread.join(timeout=60)
        context.close()
        engine.dispose()
    assert not errors, errors[:1]
    assert all(a in old + new for a in answers), [a[0] for a in answers if a not in old + new][:3]
    assert all(a in old for a in answers[:released])  # the open publish was invisible
    assert all(a in new for a in answers[-8:])
