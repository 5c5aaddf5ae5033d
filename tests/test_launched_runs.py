"""Which runs take knowbase's process settings (``kb_assets.assets.launched``): one Dagster launched
into a process of its own, never one executed in the calling process; and forks beside Dagster's
threads only where the launched run's steps all execute in that process. The launched case end to
end, through ``kb ui`` and its sensor, is in ``test_ui``."""

from __future__ import annotations

import gc
from pathlib import Path

import dagster as dg
from dagster._core.remote_origin import InProcessCodeLocationOrigin, RemoteJobOrigin, RemoteRepositoryOrigin
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin

from kb_assets.assets.launched import forks_beside_dagster, launched_by_dagster
from kb_assets.core import forked
from kb_assets.core.collector import COLLECTOR_THRESHOLDS
from kb_assets.jobs import INDEX_JOB
from tests.gitfixtures import commit_tree, init_repo
from tests.kbfixtures import KbEnv


def _run(*, launched: bool) -> dg.DagsterRun:
    """A run of the index job, launched from knowbase's code location or executed in-process."""
    location = InProcessCodeLocationOrigin(LoadableTargetOrigin(module_name="kb_assets.definitions"))
    origin = RemoteJobOrigin(RemoteRepositoryOrigin(location, "__repository__"), INDEX_JOB)
    return dg.DagsterRun(job_name=INDEX_JOB, remote_job_origin=origin if launched else None)


def test_only_a_launched_run_whose_steps_run_in_its_process_forks_beside_dagster_s_threads() -> None:
    launched, executed_here = _run(launched=True), _run(launched=False)
    assert launched_by_dagster(launched)
    assert not launched_by_dagster(executed_here)
    assert forks_beside_dagster(launched, dg.in_process_executor.name)
    assert not forks_beside_dagster(launched, dg.multiprocess_executor.name)  # step processes
    assert not forks_beside_dagster(executed_here, dg.in_process_executor.name)


def test_an_in_process_run_leaves_the_calling_process_as_it_was(kb_env: KbEnv, tmp_path: Path) -> None:
    """``kb index`` called in this process (as an embedding program would) changes neither its
    collector thresholds nor whether it forks beside Dagster's threads."""
    repo = init_repo(tmp_path / "r")
    commit_tree(repo, {"a.py": "import os\n"}, "first")
    thresholds = gc.get_threshold()
    indexed = kb_env.kb("index", repo, "--no-verify")
    assert indexed.code == 0, indexed.stderr
    assert gc.get_threshold() == thresholds != COLLECTOR_THRESHOLDS
    assert not forked._beside_dagster
