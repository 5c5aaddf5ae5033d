"""``branch_sensor`` evaluated through Dagster's own sensor-evaluation API against a real store
and a real git repository: new first-parent commits become partitions and runs, oldest first; the
cursor survives a restart through ``branch_ref``; catch-up limits and force-pushes index the tip."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import sqlalchemy as sa

from kb_assets.sensors import branch_sensor
from kb_resources.git.repo import GitRepo
from kb_resources.resources import KnowbaseResource
from kb_resources.settings import load_settings
from kb_resources.store.engine import open_store
from kb_resources.store.schema import branch_ref
from tests.gitfixtures import commit_tree, init_repo, run_git
from tests.kbfixtures import KbEnv


@pytest.fixture
def instance(tmp_path: Path) -> Iterator[dg.DagsterInstance]:
    """An ephemeral Dagster instance for sensor evaluation."""
    (tmp_path / "dagster").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp_path / "dagster")) as inst:
        yield inst


def _commit(repo: Path, n: int) -> str:
    return commit_tree(repo, {"pkg/__init__.py": "", f"pkg/m{n}.py": "import os\n"}, f"commit {n}")


def _evaluate(
    kb_env: KbEnv, repo: Path, instance: dg.DagsterInstance, cursor: str | None, **overrides: object
) -> dg.SensorResult:
    config: dict[str, Any] = {
        "repo": str(repo),
        "kb_home": str(kb_env.home),
        "dagster_home": str(kb_env.home / "dagster"),
        "db_url": kb_env.db_url,
        **overrides,
    }
    resource = KnowbaseResource(**config)
    context = dg.build_sensor_context(instance=instance, cursor=cursor, resources={"kb": resource})
    result = branch_sensor(context)
    assert isinstance(result, dg.SensorResult)
    return result


def _partitions(result: dg.SensorResult) -> list[str]:
    return [r.partition_key or "" for r in result.run_requests or []]


def test_sensor_requests_each_new_commit_oldest_first_and_resumes(
    kb_env: KbEnv, tmp_path: Path, instance: dg.DagsterInstance
) -> None:
    """After the first commit is indexed, the two new ones are registered as `commits` partitions
    and requested in order; a second evaluation requests nothing; a restarted sensor (no cursor)
    resumes from `branch_ref` and requests only what is new since."""
    repo = init_repo(tmp_path / "r")
    first = _commit(repo, 1)
    assert kb_env.kb("index", repo).code == 0
    second, third = _commit(repo, 2), _commit(repo, 3)
    result = _evaluate(kb_env, repo, instance, None)
    assert _partitions(result) == [second, third]
    added = [key for req in result.dynamic_partitions_requests or [] for key in req.partition_keys or []]
    assert added == [second, third]
    assert json.loads(result.cursor or "{}") == {"main": third}
    assert {r.run_key for r in result.run_requests or []} == {second, third}
    again = _evaluate(kb_env, repo, instance, result.cursor)
    assert _partitions(again) == []
    fourth = _commit(repo, 4)
    restarted = _evaluate(kb_env, repo, instance, None)
    assert _partitions(restarted) == [fourth]
    assert first not in _partitions(restarted)


def test_sensor_indexes_only_the_tip_after_a_jump_or_a_force_push(
    kb_env: KbEnv, tmp_path: Path, instance: dg.DagsterInstance
) -> None:
    """More new commits than max_catchup: only the new tip. A force-push (the cursor is no longer
    an ancestor of the tip): only the new tip, tagged as such."""
    repo = init_repo(tmp_path / "r")
    base = _commit(repo, 1)
    assert kb_env.kb("index", repo).code == 0
    first = _evaluate(kb_env, repo, instance, None)
    shas = [_commit(repo, n) for n in range(2, 6)]
    jumped = _evaluate(kb_env, repo, instance, first.cursor, max_catchup=2)
    assert _partitions(jumped) == [shas[-1]]
    run_git(repo, "reset", "-q", "--hard", base)
    rewritten = commit_tree(
        repo, {"pkg/__init__.py": "", "pkg/other.py": "import sys\n"}, "rewritten history"
    )
    pushed = _evaluate(kb_env, repo, instance, jumped.cursor)
    assert _partitions(pushed) == [rewritten]
    assert (pushed.run_requests or [])[0].tags["kb/reason"] == "force_push"


def _branch_rows(kb_env: KbEnv, repo: Path) -> list[tuple[str, str, object]]:
    """``branch_ref`` as it is: (name, sha, updated_at) per branch."""
    ref = branch_ref.c
    query = sa.select(ref.name, ref.sha, ref.updated_at).order_by(ref.name)
    settings = load_settings(kb_env.environ)
    with open_store(settings, GitRepo.open(repo).key()) as store, store.engine.connect() as conn:
        return [(name, sha, at) for name, sha, at in conn.execute(query).all()]


def test_a_look_that_finds_the_branches_where_they_were_writes_nothing(
    kb_env: KbEnv, tmp_path: Path, instance: dg.DagsterInstance
) -> None:
    """The sensor looks every few seconds (``SENSOR_INTERVAL_S``): a look at branches that did not
    move leaves ``branch_ref`` untouched; a look after a commit moves the branch's row."""
    repo = init_repo(tmp_path / "r")
    _commit(repo, 1)
    assert kb_env.kb("index", repo).code == 0
    first = _evaluate(kb_env, repo, instance, None)
    rows = _branch_rows(kb_env, repo)
    again = _evaluate(kb_env, repo, instance, first.cursor)
    assert _partitions(again) == []
    assert _branch_rows(kb_env, repo) == rows
    second = _commit(repo, 2)
    moved = _evaluate(kb_env, repo, instance, again.cursor)
    assert _partitions(moved) == [second]
    [(name, sha, updated_at)] = _branch_rows(kb_env, repo)
    assert (name, sha) == ("main", second)
    assert updated_at != rows[0][2]
