"""An asset's checks are evaluated in one Dagster step, each check still its own key and result;
and ``code_spans``' data version names exactly the commit's files and blobs."""

from __future__ import annotations

import hashlib
import pickle
import subprocess
from pathlib import Path

import pytest

from kb_assets.cli.instance import open_instance
from kb_assets.core.extractors.registry import EXTRACTORS, parser_version
from kb_assets.core.ids import SortedIds, sorted_distinct
from kb_assets.indexing.extract import DIGEST_CHUNK, ids_digest
from kb_gates import gates
from kb_gates.checks import EXTRACTORS_STEP, all_checks, extractor_check_list
from kb_resources.git.repo import GitRepo
from kb_resources.settings import load_settings
from kb_resources.store import reads
from kb_resources.store.engine import open_store
from tests.dagsterruns import materialize_alone
from tests.gitfixtures import build_repo
from tests.kbfixtures import KbEnv

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
ASSETS = {"commit_tree", "code_spans", "knowledge_snapshot", *(ex.asset_name for ex in EXTRACTORS)}


def _newest_run(env: KbEnv, repo: Path) -> tuple[set[str], dict[str, bool]]:
    """The step keys of the repository's newest Dagster run and its check evaluations
    (``asset.check`` -> passed)."""
    settings = load_settings(env.environ)
    with open_store(settings, GitRepo.open(repo).key()) as store:
        instance = open_instance(settings, store)
        try:
            run = instance.get_run_records(limit=1)[0].dagster_run
            steps = {s.step_key for s in instance.get_run_step_stats(run.run_id)}
            evaluations: dict[str, bool] = {}
            for entry in instance.all_logs(run.run_id):
                event = entry.dagster_event
                if event is not None and event.event_type_value == "ASSET_CHECK_EVALUATION":
                    data = event.asset_check_evaluation_data
                    evaluations[f"{data.asset_key.to_user_string()}.{data.check_name}"] = data.passed
            return steps, evaluations
        finally:
            instance.dispose()


def test_the_checks_run_in_one_step_per_asset_or_level_and_report_one_result_each(
    kb_env: KbEnv, tmp_path: Path
) -> None:
    """An index run has one step per asset and, for the checks (not one per check): one step for
    the spans, one for the snapshot, one for every extractor that reads no other's asset and one
    for the process paths (which read the call edges: they wait for those checks); every check
    of the Definitions on those assets is evaluated once, under its own key."""
    repo = tmp_path / "history"
    sha = build_repo(FIXTURES / "history", repo)[0]
    assert kb_env.kb("index", repo, "--sha", sha, "--no-verify").code == 0
    steps, evaluations = _newest_run(kb_env, repo)
    checked = {key for check in all_checks() for key in check.check_keys}
    check_steps = {"code_spans_invariants", "knowledge_snapshot_invariants", EXTRACTORS_STEP}
    assert steps == ASSETS | check_steps | {"process_paths_invariants"}
    assert set(evaluations) == {f"{k.asset_key.to_user_string()}.{k.name}" for k in checked}
    assert all(evaluations.values()), evaluations


def test_a_check_that_raises_fails_its_step_and_nothing_is_published(
    kb_env: KbEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A check that raises instead of answering fails the extractors' check step after the
    results before it in the declared order: the grounded check of the first extractor is
    recorded, no later check is reported, the run stops there (exit 1 naming the error) and the
    snapshot is not published."""
    repo = tmp_path / "history"
    sha = build_repo(FIXTURES / "history", repo)[0]

    def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError("the reproducibility gate broke")

    with monkeypatch.context() as patched:
        patched.setattr(gates, "ids_reproducibility", broken)
        failed = kb_env.kb("index", repo, "--sha", sha, "--no-verify")
    assert failed.code == 1
    assert "the reproducibility gate broke" in failed.stderr
    steps, evaluations = _newest_run(kb_env, repo)
    assert EXTRACTORS_STEP in steps
    assert "process_paths_invariants" not in steps  # the run stops at the failed step
    first = EXTRACTORS[0].asset_name
    extractor_assets = {ex.asset_name for ex in EXTRACTORS}
    reported = {key for key in evaluations if key.split(".")[0] in extractor_assets}
    assert reported == {f"{first}.every_artifact_grounded"}, evaluations
    assert evaluations[f"{first}.every_artifact_grounded"] is True
    assert "knowledge_snapshot" not in steps
    settings = load_settings(kb_env.environ)
    with open_store(settings, GitRepo.open(repo).key()) as store, store.engine.connect() as conn:
        assert not reads.snapshot_artifact_ids(conn, sha)


def test_an_extractor_materialized_alone_has_only_its_own_checks_evaluated(
    kb_env: KbEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Materializing one extractor's asset (as from the UI) runs the extractors' check step for
    that asset's checks only, and they pass."""
    repo = tmp_path / "history"
    sha = build_repo(FIXTURES / "history", repo)[0]
    assert kb_env.kb("index", repo, "--sha", sha, "--no-verify").code == 0
    asset = EXTRACTORS[0].asset_name
    assert materialize_alone(kb_env, repo, sha, asset, monkeypatch).success
    _, evaluations = _newest_run(kb_env, repo)
    assert evaluations == {f"{asset}.{check.name}": True for check in extractor_check_list(EXTRACTORS[0])}


def test_the_spans_data_version_names_the_commits_files_and_blobs(kb_env: KbEnv, tmp_path: Path) -> None:
    """Two commits with one tree get one ``occurrence_digest``; a commit that changes one file's
    blob gets another; it is reproducible from the store alone (same value read twice)."""
    repo = tmp_path / "history"
    shas = build_repo(FIXTURES / "history", repo)
    tree = _git(repo, "rev-parse", f"{shas[0]}^{{tree}}")
    same_tree = _git(repo, "commit-tree", tree, "-p", shas[-1], "-m", "back to the first tree")
    for sha in (shas[0], shas[1], same_tree):
        assert kb_env.kb("index", repo, "--sha", sha, "--no-verify").code == 0
    settings = load_settings(kb_env.environ)
    with open_store(settings, GitRepo.open(repo).key()) as store, store.engine.connect() as conn:
        digest = {sha: reads.occurrence_digest(conn, sha, parser_version()) for sha in shas[:2]}
        again = reads.occurrence_digest(conn, same_tree, parser_version())
        other_parser = reads.occurrence_digest(conn, shas[0], "no-such-parser")
    assert digest[shas[0]] is not None
    assert again == digest[shas[0]]
    assert digest[shas[1]] != digest[shas[0]]
    assert other_parser is None


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_an_assets_data_version_is_the_digest_of_its_sorted_distinct_ids() -> None:
    """``ids_digest`` (each extractor asset's data version) is sha256 over the distinct ids in
    sorted order, one after the other: the same for any order or repetition of the ids, and the
    value every earlier run stored for the same set."""
    ids = [hashlib.sha256(str(n).encode()).hexdigest() for n in range(3 * DIGEST_CHUNK + 5)]
    step_by_step = hashlib.sha256()
    for artifact_id in sorted(ids):
        step_by_step.update(artifact_id.encode("ascii"))
    ordered = tuple(sorted(ids))  # as staged: taken as they are, in chunks
    assert ids_digest(ordered) == step_by_step.hexdigest()
    assert ids_digest(reversed(ids + ids[:7])) == step_by_step.hexdigest()
    assert ids_digest(tuple(sorted(ids + ids[:1]))) == step_by_step.hexdigest()  # sorted, repeated
    assert ids_digest([]) == hashlib.sha256().hexdigest()
    assert ids_digest(ids[1:]) != ids_digest(ids)


def test_sorted_distinct_ids_are_compared_once() -> None:
    """``sorted_distinct`` sorts and de-duplicates whatever it is given, and hands back its own
    answer as it is when given it again (``SortedIds``), so that staging and the data version do
    not compare a run's ids once more; an ordinary tuple that only looks sorted is checked."""
    ids = [hashlib.sha256(str(n).encode()).hexdigest() for n in range(50)]
    once = sorted_distinct(reversed(ids + ids[:3]))
    assert isinstance(once, SortedIds)
    assert list(once) == sorted(ids)
    assert sorted_distinct(once) is once
    assert ids_digest(once) == ids_digest(ids)
    repeated = (*sorted(ids), sorted(ids)[-1])
    assert list(sorted_distinct(repeated)) == sorted(ids)
    assert pickle.loads(pickle.dumps(once)) == once
