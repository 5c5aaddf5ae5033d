"""A published snapshot's counts by kind, read from its extractors' entry sets, are the counts of
its artifacts by kind, model-pass entries included."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from kb_assets.indexing.publish import kind_counts
from kb_resources.git.repo import GitRepo
from kb_resources.settings import load_settings
from kb_resources.store import reads
from kb_resources.store.engine import open_store
from tests.gitfixtures import build_repo
from tests.kbfixtures import KbEnv

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def test_counts_by_kind_match_the_artifacts(kb_env: KbEnv, tmp_path: Path) -> None:
    sha = build_repo(FIXTURES / "mcp_shop", tmp_path / "repo")[-1]
    assert kb_env.kb("index", tmp_path / "repo").code == 0
    kb_env.extra["KB_LLM_PROVIDER"] = "stub"  # descriptions: entries of a model pass
    assert kb_env.kb("describe", tmp_path / "repo").code == 0
    store = open_store(load_settings(kb_env.environ), GitRepo.open(tmp_path / "repo").key())
    try:
        with store.engine.connect() as conn:
            counted = reads.artifact_counts(conn, sha)
            model_passes = conn.scalar(
                sa.text("SELECT count(*) FROM snapshot_entry WHERE sha = :sha AND extractor_id = 'describe'"),
                {"sha": sha},
            )
            assert kind_counts(conn, sha) == counted
    finally:
        store.close()
    assert {"call_edge", "import_edge", "public_symbol", "description"} <= set(counted)
    assert model_passes
