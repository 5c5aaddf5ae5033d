"""The parse step writes blobs batch by batch as its workers return them, facts encoded in the
workers: what it stores must be exactly what one write of the whole in-process parse stores."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from kb_assets.core.blobs import analyze_blob, encode_blob
from kb_assets.core.extractors.registry import COLLECTORS, EXTRACTORS, parser_version
from kb_assets.core.spans import ParseLimits
from kb_assets.indexing import load, parallel, parse
from kb_resources.git.repo import GitRepo
from kb_resources.store import reads, writes
from kb_resources.store.engine import Store
from tests.gitfixtures import build_repo

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
REFERENCE = "reference-parser"


def _repo(tmp_path: Path) -> tuple[GitRepo, list[str]]:
    """The call-graph fixture plus an unparsable file, an empty one and a duplicate blob."""
    source = tmp_path / "source" / "01-initial"
    shutil.copytree(FIXTURES / "calls_oracle" / "01-initial", source)
    (source / "broken.py").write_bytes(b"def f(:\n    return (\n")
    (source / "empty.py").write_bytes(b"")
    (source / "copy_of_broken.py").write_bytes(b"def f(:\n    return (\n")
    sha = build_repo(tmp_path / "source", tmp_path / "repo")[-1]
    repo = GitRepo.open(tmp_path / "repo")
    return repo, sorted({f.blob_id for f in repo.python_files(sha)})


def _rows(engine: sa.Engine, pv: str) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    """The parsed_blob and blob_span rows cached under ``pv``, without the version column."""
    with engine.connect() as conn:
        blobs = conn.execute(
            sa.text(
                "select blob_id, line_count, facts, gaps::text from parsed_blob"
                " where parser_version = :pv order by blob_id"
            ),
            {"pv": pv},
        ).all()
        spans = conn.execute(
            sa.text(
                "select blob_id, ordinal, span_id, start_line, end_line from blob_span"
                " where parser_version = :pv order by blob_id, ordinal"
            ),
            {"pv": pv},
        ).all()
    return [tuple(r) for r in blobs], [tuple(r) for r in spans]


@pytest.mark.parametrize("workers", [1, 2])
def test_streamed_parse_stores_what_one_write_of_the_whole_parse_stores(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    """Many small batches (two spawned workers, or in this process), several writes: the cached
    rows equal those of one ``insert_encoded_blobs`` of every blob parsed and encoded here at once."""
    repo, blob_ids = _repo(tmp_path)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "BATCH_BYTES", 1)
    monkeypatch.setattr(parse, "WRITE_BLOBS", 3)
    done = parse.ensure_parsed(repo, store.engine, blob_ids, limits=ParseLimits(), workers=workers)
    assert done == set(blob_ids)
    whole = [analyze_blob(b, repo.read_blob(b), EXTRACTORS, ParseLimits(), COLLECTORS) for b in blob_ids]
    with store.engine.begin() as conn:
        writes.insert_encoded_blobs(conn, REFERENCE, map(encode_blob, whole))
    streamed, reference = _rows(store.engine, parser_version()), _rows(store.engine, REFERENCE)
    assert len(streamed[0]) == len(blob_ids) > 8
    assert any(gaps != "[]" for *_, gaps in streamed[0])  # the unparsable file's gap is cached too
    assert streamed == reference


def test_a_second_parse_reuses_the_cache_and_a_forced_one_checks_it(store: Store, tmp_path: Path) -> None:
    """Cached blobs are not parsed again; ``force`` re-parses them all and finds them identical."""
    repo, blob_ids = _repo(tmp_path)
    limits, engine = ParseLimits(), store.engine
    assert parse.ensure_parsed(repo, engine, blob_ids[:4], limits=limits, workers=1) == set(blob_ids[:4])
    assert parse.ensure_parsed(repo, engine, blob_ids, limits=limits, workers=1) == set(blob_ids[4:])
    before = _rows(store.engine, parser_version())
    forced = parse.ensure_parsed(repo, store.engine, blob_ids, limits=limits, workers=1, force=True)
    assert forced == set(blob_ids)
    assert _rows(store.engine, parser_version()) == before


@pytest.mark.parametrize("workers", [1, 2])
def test_blobs_are_read_as_their_batches_are_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    """``analyze_blobs`` reads its input as batches are made (in this process, or submitted to
    the workers a few at a time), not all of it first, and returns what analyzing each blob here
    returns, in input order."""
    repo, blob_ids = _repo(tmp_path)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "BATCH_BYTES", 1)  # a batch per blob
    read: list[str] = []

    def blobs() -> Iterator[tuple[str, bytes]]:
        for blob_id in blob_ids:
            read.append(blob_id)
            yield blob_id, repo.read_blob(blob_id)

    results = parallel.analyze_blobs(blobs(), ParseLimits(), workers=workers)
    first = next(results)
    assert len(read) <= workers * parallel.IN_FLIGHT_PER_WORKER < len(blob_ids)
    found = first + [blob for batch in results for blob in batch]
    assert read == blob_ids
    expected = [
        encode_blob(analyze_blob(b, repo.read_blob(b), EXTRACTORS, ParseLimits(), COLLECTORS))
        for b in blob_ids
    ]
    assert found == expected


def test_a_load_right_after_the_parse_takes_its_blobs_from_memory(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the parse just wrote is what loading reads back: the blobs a load finds parsed by this
    process are not read from the store, once, and equal those read from it."""
    repo, blob_ids = _repo(tmp_path)
    load.forget_programs()
    assert parse.ensure_parsed(repo, store.engine, blob_ids, limits=ParseLimits(), workers=1) == set(blob_ids)
    asked: list[list[str]] = []
    real = reads.load_parsed_blobs

    def recorded(conn: sa.Connection, pv: str, ids: list[str]) -> Any:
        asked.append(list(ids))
        return real(conn, pv, ids)

    monkeypatch.setattr(reads, "load_parsed_blobs", recorded)
    from_memory = load._load_blobs(repo, store.engine, blob_ids, limits=ParseLimits(), workers=1)
    assert asked == []
    assert parse.take_parsed(store.engine, blob_ids) == {}  # handed over once
    load.forget_programs()
    from_store = load._load_blobs(repo, store.engine, blob_ids, limits=ParseLimits(), workers=1)
    assert asked == [blob_ids]
    assert from_memory == from_store
    assert any(facts for _, facts in from_store.values())


def test_a_parse_that_no_load_follows_keeps_nothing_in_memory(store: Store, tmp_path: Path) -> None:
    """``keep=False`` (``kb parse``): the blobs are cached in the store and none stays in memory,
    not even one an earlier parse of this process kept for its load."""
    repo, blob_ids = _repo(tmp_path)
    half = len(blob_ids) // 2
    parse.ensure_parsed(repo, store.engine, blob_ids[:half], limits=ParseLimits(), workers=1)
    done = parse.ensure_parsed(repo, store.engine, blob_ids, limits=ParseLimits(), workers=1, keep=False)
    assert done == set(blob_ids[half:])
    assert parse.take_parsed(store.engine, blob_ids) == {}
    with store.engine.connect() as conn:
        assert reads.parsed_blob_ids(conn, parser_version(), blob_ids) == set(blob_ids)
