"""Artifacts built and written in batches: the same artifacts and ids as ``build_artifacts`` over the
whole set, each once, conflicts still caught, and the same staged ids after a real index."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from kb_assets.core.errors import DraftKindError, IdentityConflictError
from kb_assets.core.extractors.base import Draft, OnDemandDrafts
from kb_assets.core.extractors.calls import CallsExtractor, EdgeDrafts
from kb_assets.core.extractors.registry import EXTRACTORS
from kb_assets.core.grounding import artifact_batches, build_artifacts
from kb_assets.core.program import Program
from kb_assets.core.spans import ParseLimits
from kb_assets.indexing import artifact_writes, extract
from kb_assets.indexing.load import forget_programs, load_program
from kb_resources.git.repo import GitRepo
from kb_resources.settings import load_settings
from kb_resources.store import reads
from kb_resources.store.engine import open_store
from tests.gitfixtures import build_repo, read_folder
from tests.kbfixtures import KbEnv
from tests.programs import program_from_files

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _calls() -> tuple[Program, tuple[Draft, ...]]:
    files, _ = read_folder(FIXTURES / "calls_oracle" / "01-initial")
    program = program_from_files(files)
    drafts = tuple(CallsExtractor().resolve(program).drafts)
    assert len(drafts) > 10
    return program, drafts


@pytest.mark.parametrize("size", [1, 3, 1000])
def test_batches_hold_the_artifacts_of_build_artifacts_each_once(size: int) -> None:
    """Flattened and sorted, the batches are ``build_artifacts``' list, even with every draft
    repeated; no batch is larger than ``size``."""
    program, drafts = _calls()
    whole = build_artifacts(drafts, extractor_id="calls", extractor_version="1", program=program)
    batches = list(
        artifact_batches(
            drafts + drafts, extractor_id="calls", extractor_version="1", program=program, size=size
        )
    )
    assert all(0 < len(b) <= size for b in batches)
    flat = [a for b in batches for a in b]
    assert sorted(flat, key=lambda a: (a.kind, a.logical_key)) == whole
    assert len({a.artifact_id for a in flat}) == len(flat) == len(whole)


def test_a_logical_key_built_with_two_ids_is_a_conflict_in_either_form() -> None:
    """A draft repeating another's logical key with another payload raises, batched or not."""
    program, drafts = _calls()
    clash = dataclasses.replace(drafts[0], payload={**drafts[0].payload, "extra": 1})
    with pytest.raises(IdentityConflictError):
        build_artifacts([*drafts, clash], extractor_id="calls", extractor_version="1", program=program)
    with pytest.raises(IdentityConflictError):
        list(
            artifact_batches(
                [*drafts, clash], extractor_id="calls", extractor_version="1", program=program, size=2
            )
        )


def test_a_draft_of_a_kind_the_extractor_does_not_declare_is_refused_in_either_form() -> None:
    """The snapshot's counts by kind come from its extractors' entries, so each extractor's
    artifacts must all be of its one declared kind."""
    program, drafts = _calls()
    stray = dataclasses.replace(drafts[-1], kind="entity")
    build_artifacts(drafts, extractor_id="calls", extractor_version="1", program=program, kind="call_edge")
    with pytest.raises(DraftKindError, match="declares kind 'call_edge'"):
        build_artifacts(
            [*drafts, stray], extractor_id="calls", extractor_version="1", program=program, kind="call_edge"
        )
    with pytest.raises(DraftKindError):
        list(
            artifact_batches(
                [*drafts, stray],
                extractor_id="calls",
                extractor_version="1",
                program=program,
                size=2,
                kind="call_edge",
            )
        )


def test_an_index_written_two_artifacts_at_a_time_stages_the_recomputed_ids(
    kb_env: KbEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With tiny batches the index passes its blocking gates (the ids recomputed in one piece match
    the staged ones, nothing is orphaned), and each extractor's staged ids are exactly those of
    ``run_extractor``; every staged artifact is stored."""
    monkeypatch.setattr(artifact_writes, "WRITE_ARTIFACTS", 2)
    sha = build_repo(FIXTURES / "calls_oracle", tmp_path / "repo")[-1]
    indexed = kb_env.kb("index", tmp_path / "repo")
    assert indexed.code == 0, indexed.stderr
    repo = GitRepo.open(tmp_path / "repo")
    engine = open_store(load_settings(kb_env.environ), repo.key()).engine
    forget_programs()
    program = load_program(repo, engine, sha, limits=ParseLimits(), workers=1)
    with engine.connect() as conn:
        for extractor in EXTRACTORS:
            expected = {a.artifact_id for a in extract.run_extractor(extractor, program).artifacts}
            staged = reads.staged_artifact_ids(conn, sha, extractor.extractor_id)
            assert set(staged) == expected
            assert set(reads.records_by_id(conn, sha, staged)) == set(staged)
        calls = reads.staged_artifact_ids(conn, sha, "calls")
    assert len(calls) > 10


def test_call_edge_drafts_are_made_on_demand_and_read_alike_every_way() -> None:
    """The calls extractor's drafts are ``OnDemandDrafts``: read by index (negative too), by
    iteration (a chunk at a time) or by parts, they are the same drafts in the same order, each
    read making them afresh; every logical key occurs once, as the type promises; positions
    outside the sequence and stepped slices are refused."""
    files, _ = read_folder(FIXTURES / "calls_oracle" / "01-initial")
    program = program_from_files(files)
    drafts = CallsExtractor().resolve(program).drafts
    assert isinstance(drafts, OnDemandDrafts)
    n = len(drafts)
    by_index = [drafts[i] for i in range(n)]
    assert drafts[-1] == by_index[-1]
    assert list(drafts) == by_index
    EdgeDrafts.CHUNK, chunk = 3, EdgeDrafts.CHUNK
    try:
        assert list(drafts) == by_index
    finally:
        EdgeDrafts.CHUNK = chunk
    cut = n // 3
    assert [*drafts[:cut], *drafts[cut:]] == by_index
    assert list(drafts[cut : cut + 2]) == by_index[cut : cut + 2]
    assert len(drafts[n : n + 5]) == 0
    assert drafts[0] is not drafts[0]
    assert len({(d.kind, d.logical_key) for d in by_index}) == n
    with pytest.raises(IndexError):
        drafts[n]
    with pytest.raises(ValueError, match="step 1"):
        drafts[::2]
