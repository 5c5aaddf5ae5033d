"""The blocking checks of an incremental commit read a large staged set against the base it was
indexed on (``kb_resources.store.staged_delta``), and still catch what is new and wrong."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from kb_assets.cli.instance import dagster_environment, open_instance
from kb_assets.core.extractors.imports import EXTRACTOR_ID as IMPORTS_ID
from kb_assets.core.models import Grounding
from kb_assets.jobs import INDEX_JOB
from kb_gates import gates
from kb_resources.git.repo import GitRepo
from kb_resources.settings import load_settings
from kb_resources.store import commit_reads, reads, staged_delta, writes
from kb_resources.store.engine import Store, open_store
from kb_resources.store.schema import code_span
from tests.gitfixtures import build_repo
from tests.kbfixtures import KbEnv
from tests.storefixtures import grounded

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CHECKS_WITH_A_BASE = (
    "every_artifact_grounded",
    "ids_reproducible",
    "artifact_frame_valid",
    "span_frame_valid",
    "zero_orphans",
)


def _since_by_check(store: Store, env: KbEnv, sha: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """``asset.check -> since`` of the extractor checks of the newest run that indexed ``sha``."""
    from dagster import DagsterEventType

    settings = load_settings(env.environ)
    for key, value in dagster_environment(settings, store).items():
        monkeypatch.setenv(key, value)  # open_instance sets them; the test restores them
    instance = open_instance(settings, store)
    try:
        runs = instance.get_runs()
        run = next(r for r in runs if r.job_name == INDEX_JOB and r.tags.get("dagster/partition") == sha)
        found: dict[str, str] = {}
        for entry in instance.all_logs(run.run_id, of_type=DagsterEventType.ASSET_CHECK_EVALUATION):
            evaluation: Any = entry.dagster_event and entry.dagster_event.event_specific_data
            if evaluation.check_name in CHECKS_WITH_A_BASE:
                name = f"{evaluation.asset_key.to_user_string()}.{evaluation.check_name}"
                found[name] = str(evaluation.metadata["since"].value)
        return found
    finally:
        instance.dispose()


def _two_commits_indexed(kb_env: KbEnv, tmp_path: Path) -> tuple[Path, list[str]]:
    """The history fixture's first two commits, each indexed by ``kb index`` (the second on the first)."""
    repo = tmp_path / "history"
    shas = build_repo(FIXTURES / "history", repo)[:2]
    for sha in shas:
        res = kb_env.kb("index", repo, "--sha", sha)
        assert res.code == 0, res.stderr
    return repo, shas


def test_checks_read_a_large_staged_set_against_the_indexed_base(
    kb_env: KbEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With every non-empty staged set counted as large, a full index checks whole sets, the next
    commit's checks (and its span frame and zero-orphans checks, whatever the size) name its base
    as what they were read against, and both commits publish."""
    monkeypatch.setattr(commit_reads, "DELTA_MIN_STAGED", 0)
    monkeypatch.setattr(staged_delta, "GROUNDED_DELTA_MAX_CHANGED", 1.0)  # a fixture's change is large
    kb_env.extra["KB_VERIFY_MAX_FILES"] = "0"  # ids_reproducible takes the stored sample
    repo, shas = _two_commits_indexed(kb_env, tmp_path)
    with open_store(load_settings(kb_env.environ), GitRepo.open(repo).key()) as store:
        first = _since_by_check(store, kb_env, shas[0], monkeypatch)
        second = _since_by_check(store, kb_env, shas[1], monkeypatch)
    assert first
    assert set(first.values()) == {"none"}
    assert set(second.values()) <= {shas[0], "none"}
    assert second["import_edges.every_artifact_grounded"] == shas[0]
    assert second["import_edges.artifact_frame_valid"] == shas[0]
    assert second["import_edges.ids_reproducible"] == shas[0]
    assert second["code_spans.span_frame_valid"] == shas[0]
    assert second["knowledge_snapshot.zero_orphans"] == shas[0]  # the base's own count passed


def test_a_new_ungrounded_artifact_is_caught_against_the_base(
    kb_env: KbEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An artifact staged at the commit and absent from the base's snapshot is checked: one with no
    grounding at the commit is reported, and the frame check counts it, alone."""
    monkeypatch.setattr(commit_reads, "DELTA_MIN_STAGED", 0)
    repo, shas = _two_commits_indexed(kb_env, tmp_path)
    with open_store(load_settings(kb_env.environ), GitRepo.open(repo).key()) as store:
        with store.engine.begin() as conn:
            span_id = conn.execute(sa.select(sa.func.min(code_span.c.span_id))).scalar_one()
            stray = grounded("import:nowhere->x", [Grounding(span_id, "missing.py", "source")])
            writes.insert_artifacts(conn, [stray])
            staged = reads.staged_artifact_ids(conn, shas[1], IMPORTS_ID)
            writes.replace_staged(conn, shas[1], IMPORTS_ID, [*staged, stray.artifact_id])
        since = gates.delta_since(store.engine, shas[1], IMPORTS_ID, shas[0])
        assert since == shas[0]
        assert gates.ungrounded(store.engine, shas[1], IMPORTS_ID, since=since) == [stray.artifact_id]
        rows = gates.artifact_rows(store.engine, shas[1], IMPORTS_ID, since=since)
        checked = [row[0] for batch in rows for row in batch]
    assert checked == [stray.artifact_id]


def test_after_a_large_change_the_grounded_check_reads_the_whole_set(
    kb_env: KbEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fixture's second commit changes more than ``GROUNDED_DELTA_MAX_CHANGED`` of its files:
    ``every_artifact_grounded`` then reads the whole staged set (``since`` is none), while the
    frame check still reads only what the base lacks."""
    monkeypatch.setattr(commit_reads, "DELTA_MIN_STAGED", 0)
    repo, shas = _two_commits_indexed(kb_env, tmp_path)
    with open_store(load_settings(kb_env.environ), GitRepo.open(repo).key()) as store:
        with store.engine.connect() as conn:
            share = staged_delta.changed_share(conn, shas[1], shas[0])
        assert share > staged_delta.GROUNDED_DELTA_MAX_CHANGED
        second = _since_by_check(store, kb_env, shas[1], monkeypatch)
    assert second["import_edges.every_artifact_grounded"] == "none"
    assert second["import_edges.artifact_frame_valid"] == shas[0]
