"""A snapshot is published only from staged knowledge that passed its blocking checks, also when
``knowledge_snapshot`` is materialized on its own after a run whose blocking check failed
(the checks against a base trust what is published; ``kb_assets.core.proof``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kb_assets.core.errors import UnprovenSnapshotError
from kb_assets.core.proof import CheckEvidence, unproven
from kb_gates import gates
from kb_resources.git.repo import GitRepo
from kb_resources.settings import load_settings
from kb_resources.store import reads
from kb_resources.store.engine import open_store
from tests.dagsterruns import materialize_alone
from tests.gitfixtures import build_repo
from tests.kbfixtures import KbEnv

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _published(env: KbEnv, repo: Path, sha: str) -> bool:
    settings = load_settings(env.environ)
    with open_store(settings, GitRepo.open(repo).key()) as store, store.engine.connect() as conn:
        return bool(reads.snapshot_artifact_ids(conn, sha))


def test_the_snapshot_alone_refuses_staged_knowledge_whose_blocking_check_failed(
    kb_env: KbEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run whose ``every_artifact_grounded`` fails publishes nothing; materializing the snapshot
    alone afterwards refuses, naming the failed check; indexing the commit again publishes it."""
    repo = tmp_path / "history"
    sha = build_repo(FIXTURES / "history", repo)[0]
    with monkeypatch.context() as patched:
        patched.setattr(gates, "ungrounded", lambda *a, **k: ["0" * 64])
        failed = kb_env.kb("index", repo, "--sha", sha)
    assert failed.code == 1, failed.stderr
    assert not _published(kb_env, repo, sha)

    result = materialize_alone(kb_env, repo, sha, "knowledge_snapshot", monkeypatch)
    assert not result.success
    failure = result.get_step_failure_events()[0].step_failure_data
    cause = failure.error.cause if failure.error is not None else None
    assert cause is not None
    assert cause.cls_name == UnprovenSnapshotError.__name__
    # the first extractor's check step to fail stopped the run: whichever it was, it is named
    assert re.search(r"\b[a-z_]+\.every_artifact_grounded \(failed\)", cause.message), cause.message
    assert not _published(kb_env, repo, sha)

    again = kb_env.kb("index", repo, "--sha", sha)
    assert again.code == 0, again.stderr
    assert _published(kb_env, repo, sha)


def test_the_snapshot_alone_publishes_what_its_checks_passed(
    kb_env: KbEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a run whose checks passed, the snapshot materialized alone again succeeds: the
    staged sets it finds are those the checks passed on."""
    repo = tmp_path / "history"
    sha = build_repo(FIXTURES / "history", repo)[0]
    assert kb_env.kb("index", repo, "--sha", sha).code == 0
    assert materialize_alone(kb_env, repo, sha, "knowledge_snapshot", monkeypatch).success
    assert _published(kb_env, repo, sha)


def test_what_does_not_vouch_for_the_current_staged_data() -> None:
    """A check vouches for an asset's staged data only if its newest evaluation passed on the data
    version the asset holds now; each other case is named with its reason, in a stable order."""
    current = {"a": "v2", "b": "v1", "gone": None}
    evidence = [
        CheckEvidence("b", "grounded", True, "v1"),
        CheckEvidence("a", "stale", True, "v1"),
        CheckEvidence("a", "failed", False, "v2"),
        CheckEvidence("a", "fresh", True, "v2"),
        CheckEvidence("a", "never", None, None),
        CheckEvidence("gone", "grounded", True, "v0"),
    ]
    assert unproven(evidence, current) == [
        "a.failed (failed)",
        "a.never (never evaluated at this commit)",
        "a.stale (passed on other staged data than the current)",
        "gone.grounded (gone was never materialized at this commit)",
    ]
