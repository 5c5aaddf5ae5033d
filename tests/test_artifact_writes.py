"""Drafts built and stored in two halves, one by a forked copy over its own connection, give the
ids and stored rows of one writer; a copy that fails leaves its half to this process; drafts whose
artifacts are stored already are not shared with a copy at all.

The store runs in a freshly spawned process, as the call-graph parts test does: a fork is only
made from a process with one thread. It reports whether a copy was made, so the comparison cannot
pass by never forking.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import sqlalchemy as sa

from kb_assets.core.extractors.base import OnDemandDrafts
from kb_assets.core.extractors.calls import CallsExtractor
from kb_assets.core.spans import ParseLimits
from kb_assets.indexing import artifact_writes
from kb_assets.indexing.extract import run_extractor
from kb_assets.indexing.load import forget_programs, load_program
from kb_resources.git.repo import GitRepo
from kb_resources.settings import load_settings
from kb_resources.store.engine import create_store_engine, open_store
from kb_resources.store.schema import artifact_derived_from
from tests.gitfixtures import build_repo
from tests.kbfixtures import KbEnv
from tests.spawned import counting_forks, run_spawned

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _calls(version: str) -> CallsExtractor:
    """The calls extractor under another version: its artifacts are new to a store that indexed
    the commit with the real one."""
    extractor = CallsExtractor()
    extractor.version = version
    return extractor


def _store_in_halves(url: str, repo_path: str, sha: str, case: tuple[str, bool, bool]) -> dict[str, Any]:
    """In a spawned process: the call edges' drafts stored by ``store_drafts`` with a copy taking
    half (batches of 3), under ``case`` (the extractor's version, whether the copy fails, whether
    the drafts are the extractor's ``OnDemandDrafts`` or a list of them); the ids, whether a copy
    was made, and the loads it reported."""
    version, fail_in_copy, on_demand = case
    engine = create_store_engine(sa.make_url(url))
    program = load_program(GitRepo.open(repo_path), engine, sha, limits=ParseLimits(), workers=0)
    extractor = _calls(version)
    made_drafts = extractor.resolve(program).drafts
    assert isinstance(made_drafts, OnDemandDrafts)
    drafts: Any = made_drafts if on_demand else list(made_drafts)
    made = counting_forks()
    artifact_writes.SHARE_MIN_DRAFTS = 1
    artifact_writes.WRITE_ARTIFACTS = 3
    if fail_in_copy:

        def broken(*_: object) -> Any:
            raise RuntimeError("the copy fails")

        artifact_writes._store_part = broken  # type: ignore[assignment]
    ids, log = artifact_writes.store_drafts(engine, program, extractor, drafts)
    engine.dispose()
    left = 0 if on_demand else sum(d is not None for d in drafts)
    return {"ids": ids, "made": made, "loaded": dict(log.rows), "left": left}


def _stored_grounding(engine: sa.Engine, ids: list[str]) -> dict[str, int]:
    with engine.connect() as conn:
        d = artifact_derived_from.c
        query = (
            sa.select(d.artifact_id, sa.func.count()).where(d.artifact_id.in_(ids)).group_by(d.artifact_id)
        )
        return {aid: int(n) for aid, n in conn.execute(query)}


def test_halves_store_what_one_writer_stores(kb_env: KbEnv, tmp_path: Path) -> None:
    """Under a version the store has not seen (so every artifact is new), with a working copy and
    with a failing one, the drafts held in a list or made on demand by each process."""
    sha = build_repo(FIXTURES / "calls_oracle", tmp_path / "repo")[-1]
    assert kb_env.kb("index", tmp_path / "repo").code == 0
    repo = GitRepo.open(tmp_path / "repo")
    store = open_store(load_settings(kb_env.environ), repo.key())
    try:
        engine = store.engine
        url = engine.url.render_as_string(hide_password=False)
        forget_programs()
        program = load_program(repo, engine, sha, limits=ParseLimits(), workers=1)
        cases = (
            ("split-a", False, False),
            ("split-b", True, False),
            ("split-c", False, True),
            ("split-d", True, True),
        )
        stored: dict[str, list[str]] = {}
        for case in cases:
            expected = run_extractor(_calls(case[0]), program).artifacts
            assert len(expected) > 10
            assert not _stored_grounding(engine, [a.artifact_id for a in expected])
            found = run_spawned(_store_in_halves, url, str(repo.root), sha, case)
            assert found["made"] == [True]
            assert found["left"] == 0
            assert found["ids"] == [a.artifact_id for a in _in_draft_order(program, expected)]
            assert found["loaded"]["artifact"] == len(expected)
            assert _stored_grounding(engine, found["ids"]) == _rows(expected)
            stored[case[0]] = found["ids"]
        for case in (("split-a", False, True), ("split-c", False, False)):
            # Stored already (an incremental run): the sample says so and no copy is forked.
            again = run_spawned(_store_in_halves, url, str(repo.root), sha, case)
            assert again["made"] == []
            assert again["ids"] == stored[case[0]]
            assert again["left"] == 0
            assert again["loaded"] == {}
    finally:
        store.close()


def _rows(artifacts: Any) -> dict[str, int]:
    """Grounding rows per artifact as ``insert_artifacts`` stores them (each edge once)."""
    return {a.artifact_id: len({(g.span_id, g.path, g.role) for g in a.grounding}) for a in artifacts}


def _in_draft_order(program: Any, artifacts: Any) -> list[Any]:
    """``run_extractor``'s artifacts (sorted by key) in the order the extractor drafts them."""
    by_key = {a.logical_key: a for a in artifacts}
    return [by_key[d.logical_key] for d in CallsExtractor().resolve(program).drafts]
