"""The MCP server builds a commit's snapshot index from the previous commit's: only the units
grounded in changed files are read again, and the result is the index a full load builds."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import sqlalchemy as sa

from kb_mcp.snapshots import SnapshotCache, SnapshotIndex, build_index
from kb_resources.store.target import parse_store_url
from tests.gitfixtures import build_repo
from tests.kbfixtures import KbEnv

if TYPE_CHECKING:
    from tests.mcpfixtures import IndexedShop

pytest_plugins = ["tests.mcpfixtures"]

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _shape(index: SnapshotIndex) -> tuple[object, ...]:
    """Everything an index holds and serves, except how it was built (``loaded``)."""
    return (
        index.sha,
        index.entries,
        index.files,
        index.grounded,
        index.blobs,
        index.located_with,
        index.keys,
        index.by_key,
        index.by_subject,
        index.subjects,
        index.modules,
    )


@pytest.fixture
def history(kb_env: KbEnv, tmp_path: Path) -> Iterator[tuple[sa.Engine, list[str]]]:
    """The five commits of ``fixtures/history`` (same files throughout) indexed one after another."""
    repo = tmp_path / "history"
    shas = build_repo(FIXTURES / "history", repo)
    for sha in shas:
        indexed = kb_env.kb("index", repo, "--sha", sha)
        assert indexed.code == 0, indexed.stderr
    engine = sa.create_engine(parse_store_url(kb_env.db_url))
    try:
        yield engine, shas
    finally:
        engine.dispose()


def test_each_commit_built_from_the_one_before_equals_a_full_load(
    history: tuple[sa.Engine, list[str]],
) -> None:
    """Body edit, reformat, moved lines, new import: the reused index is the full one every time,
    and the body edit of one file reads fewer records than the snapshot holds."""
    engine, shas = history
    with engine.connect() as conn:
        previous = build_index(conn, shas[0])
        assert previous.loaded == len(previous.entries) > 0
        for sha in shas[1:]:
            full = build_index(conn, sha)
            reused = build_index(conn, sha, previous)
            assert _shape(reused) == _shape(full)
            assert full.loaded == len(full.entries)
            previous = reused
        body_edit = build_index(conn, shas[1], build_index(conn, shas[0]))
        assert 0 < body_edit.loaded < len(body_edit.entries)


def test_an_index_is_not_reused_across_different_files(shop: IndexedShop) -> None:
    """The second shop commit adds a file (modules change, so rankings may): a full load, same result."""
    with shop.context.store.engine.connect() as conn:
        first = build_index(conn, shop.shas[0])
        second = build_index(conn, shop.shas[1], first)
        assert first.files != second.files
        assert second.loaded == len(second.entries)
        assert _shape(second) == _shape(build_index(conn, shop.shas[1]))


def test_the_cache_builds_the_next_commit_from_the_last_one(history: tuple[sa.Engine, list[str]]) -> None:
    engine, shas = history
    cache = SnapshotCache()
    with engine.connect() as conn:
        first = cache.get(conn, shas[0])
        second = cache.get(conn, shas[1])
        assert first.loaded == len(first.entries)
        assert second.loaded < len(second.entries)
        assert cache.get(conn, shas[1]) is second


def test_an_index_is_built_with_the_collector_paused_and_left_as_found(
    history: tuple[sa.Engine, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``build_index`` pauses the cyclic collector while it builds (``paused_gc``) and gives it
    back as it was: enabled with nothing frozen, or still disabled when the caller had disabled
    it; the index is the same either way."""
    import gc

    from kb_mcp import snapshots

    engine, shas = history
    seen: list[bool] = []
    build = snapshots._build_index

    def watched(*args: object) -> SnapshotIndex:
        seen.append(gc.isenabled())
        return build(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(snapshots, "_build_index", watched)
    with engine.connect() as conn:
        assert gc.isenabled()
        enabled = build_index(conn, shas[0])
        assert gc.isenabled()
        assert gc.get_freeze_count() == 0
        gc.disable()
        try:
            disabled = build_index(conn, shas[0])
            assert not gc.isenabled()
        finally:
            gc.enable()
    assert seen == [False, False]
    assert _shape(enabled) == _shape(disabled)
