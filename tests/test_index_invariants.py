"""Invariant gates of indexing: reproducible ids, zero orphans, incremental reuse, atomic failure."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kb_assets.core.extractors.imports import ImportsExtractor
from kb_assets.core.extractors.registry import parser_version
from kb_assets.indexing import parse
from kb_gates import gates
from kb_resources.git.repo import GitRepo
from kb_resources.settings import load_settings
from kb_resources.store import reads
from kb_resources.store.engine import open_store
from tests.gitfixtures import build_repo, commit_tree, init_repo
from tests.kbfixtures import KbEnv

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SUMMARY = re.compile(
    r"^indexed (?P<sha>[0-9a-f]{12}) \((?P<mode>full|incremental)\): (?P<files>\d+) files "
    r"\((?P<parsed>\d+) parsed, (?P<reused>\d+) reused\), (?P<spans>\d+) spans, "
    r"(?P<artifacts>\d+) artifacts, (?P<gaps>\d+) gaps$"
)


def _summary(stdout: str) -> dict[str, str]:
    m = SUMMARY.match(stdout.splitlines()[0])
    assert m, f"bad summary line: {stdout.splitlines()[:1]}"
    return m.groupdict()


@pytest.fixture
def shop(tmp_path: Path) -> tuple[Path, list[str]]:
    """The import-oracle fixture as a git repository."""
    shas = build_repo(FIXTURES / "imports_oracle", tmp_path / "shop")
    return tmp_path / "shop", shas


def test_reindexing_the_same_commit_yields_identical_ids(kb_env: KbEnv, shop: tuple[Path, list[str]]) -> None:
    """Determinism gate: indexing the same SHA again, incrementally and with --full, exports the
    byte-identical snapshot (same artifact ids, same records)."""
    repo, _ = shop
    assert kb_env.kb("index", repo).code == 0
    first = kb_env.kb("export", repo).stdout
    again = kb_env.kb("index", repo)
    assert again.code == 0
    assert _summary(again.stdout)["parsed"] == "0"
    full = kb_env.kb("index", repo, "--full")
    assert full.code == 0, full.stderr
    assert _summary(full.stdout)["mode"] == "full"
    assert int(_summary(full.stdout)["parsed"]) == int(_summary(full.stdout)["files"])
    assert kb_env.kb("export", repo).stdout == first
    assert first.strip()


def test_snapshot_has_zero_orphans(kb_env: KbEnv, shop: tuple[Path, list[str]]) -> None:
    """Zero-orphans gate: no snapshot entry without grounding, no grounding row without a span
    occurrence at the commit, no occurrence without its span."""
    repo, shas = shop
    assert kb_env.kb("index", repo).code == 0
    with open_store(load_settings(kb_env.environ), _key(repo)) as store:
        assert gates.orphans(store.engine, shas[-1]) == {}
        assert reads.artifact_counts(store.engine.connect(), shas[-1])["import_edge"] > 0


def test_second_commit_parses_only_changed_files(kb_env: KbEnv, tmp_path: Path) -> None:
    """Incremental indexing: a commit that changes one file parses exactly that file and reuses
    the rest, and its snapshot equals a --full index of the same commit."""
    repo = init_repo(tmp_path / "r")
    files = {f"pkg/m{i}.py": f"import os\nfrom pkg import m{(i + 1) % 5}\n" for i in range(5)}
    files["pkg/__init__.py"] = ""
    commit_tree(repo, files, "first")
    first = kb_env.kb("index", repo)
    assert first.code == 0, first.stderr
    assert _summary(first.stdout)["mode"] == "full"
    files["pkg/m0.py"] = "import sys\n"
    commit_tree(repo, files, "second")
    second = kb_env.kb("index", repo)
    assert second.code == 0, second.stderr
    s = _summary(second.stdout)
    assert (s["mode"], s["files"], s["parsed"], s["reused"]) == ("incremental", "6", "1", "5")
    # The blob summaries this process kept from the first commit and read for the new blob
    # (``parse._summaries``) cover every blob of the second, as the store says them.
    git = GitRepo.open(repo)
    store = open_store(load_settings(kb_env.environ), git.key())
    asked: list[str] = []

    def fetch(missing: list[str]) -> dict[str, reads.BlobSummary]:
        asked.extend(missing)
        return {}

    try:
        with store.engine.connect() as conn:
            blob_ids = sorted({f.blob_id for f in reads.commit_files(conn, git.resolve("HEAD"))})
            kept = parse._summaries.get(store.engine, blob_ids, fetch)
            assert asked == []
            assert kept == reads.blob_summaries(conn, parser_version(), blob_ids)
    finally:
        store.close()
    assert sum(summary.span_count for summary in kept.values()) == int(s["spans"])
    incremental = kb_env.kb("export", repo).stdout
    assert kb_env.kb("index", repo, "--full").code == 0
    assert kb_env.kb("export", repo).stdout == incremental
    assert '"import:pkg.m0->sys"' in incremental
    assert '"import:pkg.m0->os"' not in incremental


def test_a_failed_run_leaves_the_store_as_it_was(
    kb_env: KbEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Atomicity: when an extractor fails mid-run, the commit is not published, the previous
    commit's snapshot is untouched, and kb exits non-zero with one line on stderr."""
    repo = init_repo(tmp_path / "r")
    commit_tree(repo, {"a.py": "import b\n", "b.py": ""}, "first")
    assert kb_env.kb("index", repo).code == 0
    before = kb_env.kb("export", repo).stdout
    second = commit_tree(repo, {"a.py": "import c\n", "c.py": ""}, "second")

    def explode(self: ImportsExtractor, program: object) -> object:
        raise RuntimeError("injected failure")

    monkeypatch.setattr(ImportsExtractor, "resolve", explode)
    failed = kb_env.kb("index", repo)
    assert failed.code == 1
    assert len(failed.stderr.strip().splitlines()) == 1
    assert "injected failure" in failed.stderr
    monkeypatch.undo()
    assert kb_env.kb("export", repo).stdout == before
    assert kb_env.kb("export", repo, "--sha", second).code == 2


def _key(repo: Path) -> str:
    from kb_resources.git.repo import GitRepo

    return GitRepo.open(repo).key()
