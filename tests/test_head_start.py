"""The parse ``kb index`` starts before its run (``head_start``): the ``code_spans`` step takes it
when it is exactly the parse the step would do, else it is stopped; what is stored is the same
either way, and no worker outlives the command."""

from __future__ import annotations

import multiprocessing
import shutil
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from kb_assets.core.blobs import analyze_blob, encode_blob
from kb_assets.core.extractors.registry import COLLECTORS, EXTRACTORS, parser_version
from kb_assets.core.spans import ParseLimits
from kb_assets.indexing import head_start, parallel, parse
from kb_assets.indexing.parallel import Parsing
from kb_resources.git.repo import GitRepo
from kb_resources.store import writes
from kb_resources.store.engine import Store
from tests.gitfixtures import build_repo
from tests.kbfixtures import KbEnv

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
REFERENCE = "reference-parser"
LIMITS = ParseLimits()


def _repo(tmp_path: Path) -> tuple[Path, GitRepo, str]:
    """The call-graph fixture, an unparsable file and a dozen small modules, as one commit."""
    source = tmp_path / "source" / "01-initial"
    shutil.copytree(FIXTURES / "calls_oracle" / "01-initial", source)
    (source / "broken.py").write_bytes(b"def f(:\n    return (\n")
    for n in range(12):
        text = f"def f{n}(x):\n    return g{n}(x) + {n}\n\n\ndef g{n}(y):\n    return y\n"
        (source / f"extra_{n}.py").write_text(text)
    sha = build_repo(tmp_path / "source", tmp_path / "repo")[-1]
    return tmp_path / "repo", GitRepo.open(tmp_path / "repo"), sha


def _any_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """Start ahead however small the parse, one blob per batch (the fixture is a few kB)."""
    monkeypatch.setattr(head_start, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "BATCH_BYTES", 1)


def _made(monkeypatch: pytest.MonkeyPatch) -> list[Parsing]:
    """Every ``Parsing`` made from now on (the head start's and any the step makes itself)."""
    made: list[Parsing] = []
    real = Parsing.__init__

    def recorded(self: Parsing, *args: Any, **kwargs: Any) -> None:
        made.append(self)
        real(self, *args, **kwargs)

    monkeypatch.setattr(Parsing, "__init__", recorded)
    return made


def _workers() -> list[multiprocessing.process.BaseProcess]:
    """This process's children but the check process ``kb index`` keeps (``kb_gates``)."""
    return [p for p in multiprocessing.active_children() if p.name != "kb-check-process"]


def _cached_rows(engine: sa.Engine, pv: str) -> list[tuple[object, ...]]:
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                "select b.blob_id, b.line_count, b.facts, b.gaps::text, s.ordinal, s.span_id,"
                " s.start_line, s.end_line from parsed_blob b left join blob_span s"
                " on s.blob_id = b.blob_id and s.parser_version = b.parser_version"
                " where b.parser_version = :pv order by b.blob_id, s.ordinal"
            ),
            {"pv": pv},
        ).all()
    return [tuple(r) for r in rows]


def test_the_step_takes_the_parse_started_ahead_and_stores_what_its_own_parse_stores(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Started before the step, the workers already have their first batches (their blobs were
    read); the step makes no parse of its own, takes every result, caches exactly the rows of
    an in-process parse of each blob and keeps them for the load that follows."""
    _, repo, sha = _repo(tmp_path)
    _any_size(monkeypatch)
    made = _made(monkeypatch)
    read: list[str] = []
    real_read = repo.read_blob

    def recorded_read(blob_id: str) -> bytes:
        read.append(blob_id)
        return real_read(blob_id)

    monkeypatch.setattr(repo, "read_blob", recorded_read)
    blob_ids = list(head_start.readable_blobs(repo, sha))
    assert len(blob_ids) > head_start.HEAD_START_BATCHES
    with head_start.started(repo, store.engine, sha, limits=LIMITS, workers=2, force=False):
        assert len(made) == 1
        # The first batches (one blob each, empty blobs riding along) are with the workers already.
        assert head_start.HEAD_START_BATCHES <= len(read) < len(blob_ids)
        assert read == blob_ids[: len(read)]
        done = parse.ensure_parsed(repo, store.engine, blob_ids, limits=LIMITS, workers=2)
        assert len(made) == 1  # the step took the head start
        assert head_start.take(store.engine, blob_ids, LIMITS) is None  # handed over once
    assert done == set(blob_ids)
    assert read == blob_ids
    reference = [analyze_blob(b, real_read(b), EXTRACTORS, LIMITS, COLLECTORS) for b in blob_ids]
    with store.engine.begin() as conn:
        writes.insert_encoded_blobs(conn, REFERENCE, map(encode_blob, reference))
    assert _cached_rows(store.engine, parser_version()) == _cached_rows(store.engine, REFERENCE)
    assert set(parse.take_parsed(store.engine, blob_ids)) == set(blob_ids)
    assert _workers() == []


def test_a_head_start_of_another_parse_is_stopped_and_the_step_parses_itself(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step whose blobs differ from the head start's (here one blob was cached in between, as
    a concurrent ``kb parse`` shard would) stops the head start's workers and parses its own
    list; every blob ends up cached once, as without a head start."""
    _, repo, sha = _repo(tmp_path)
    _any_size(monkeypatch)
    made = _made(monkeypatch)
    blob_ids = list(head_start.readable_blobs(repo, sha))
    with head_start.started(repo, store.engine, sha, limits=LIMITS, workers=2, force=False):
        assert len(made) == 1
        parse.ensure_parsed(repo, store.engine, blob_ids[:1], limits=LIMITS, workers=1)
        assert _workers() == []  # stopped when the first parse asked
        done = parse.ensure_parsed(repo, store.engine, blob_ids, limits=LIMITS, workers=1)
    assert done == set(blob_ids[1:])
    assert len(made) == 1  # the step's own parses ran in this process (workers=1)
    with store.engine.connect() as conn:
        cached = conn.execute(
            sa.text("select count(*) from parsed_blob where parser_version = :pv"), {"pv": parser_version()}
        ).scalar_one()
    assert cached == len(blob_ids)


def test_a_head_start_is_stopped_when_another_process_cached_every_blob_meanwhile(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The step's parse then has nothing to do, and still stops the head start's workers at once,
    instead of leaving them parsing beside the rest of the run."""
    _, repo, sha = _repo(tmp_path)
    _any_size(monkeypatch)
    blob_ids = list(head_start.readable_blobs(repo, sha))
    with head_start.started(repo, store.engine, sha, limits=LIMITS, workers=2, force=False):
        assert _workers() != []
        parsed = [analyze_blob(b, repo.read_blob(b), EXTRACTORS, LIMITS, COLLECTORS) for b in blob_ids]
        with store.engine.begin() as conn:  # as a concurrent ``kb parse`` would
            writes.insert_encoded_blobs(conn, parser_version(), map(encode_blob, parsed))
        assert parse.ensure_parsed(repo, store.engine, blob_ids, limits=LIMITS, workers=2) == set()
        assert _workers() == []


def test_nothing_is_started_for_a_cached_commit_and_a_forced_parse_starts_every_blob(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit whose blobs are all cached has nothing to start (a one-file commit has too little:
    ``PARALLEL_MIN_BYTES``); ``--full`` (``force``) re-parses every blob, so its head start holds
    them all and the forced step takes it."""
    _, repo, sha = _repo(tmp_path)
    blob_ids = list(head_start.readable_blobs(repo, sha))
    parse.ensure_parsed(repo, store.engine, blob_ids, limits=LIMITS, workers=1)
    made = _made(monkeypatch)
    with head_start.started(repo, store.engine, sha, limits=LIMITS, workers=2, force=False):
        assert made == []  # too small (the real threshold)
    _any_size(monkeypatch)
    with head_start.started(repo, store.engine, sha, limits=LIMITS, workers=2, force=False):
        assert made == []  # nothing to parse
    with head_start.started(repo, store.engine, sha, limits=LIMITS, workers=2, force=True):
        assert len(made) == 1
        done = parse.ensure_parsed(repo, store.engine, blob_ids, limits=LIMITS, workers=2, force=True)
        assert len(made) == 1
    assert done == set(blob_ids)
    assert _workers() == []


def test_a_head_start_nobody_takes_is_stopped_when_its_block_ends(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run that fails before its parse leaves nothing running and nothing cached by the head
    start: it only parses, the step writes."""
    _, repo, sha = _repo(tmp_path)
    _any_size(monkeypatch)
    running: list[int] = []

    def failing_run() -> None:
        with head_start.started(repo, store.engine, sha, limits=LIMITS, workers=2, force=False):
            running.append(len(_workers()))
            raise RuntimeError("the run failed")

    with pytest.raises(RuntimeError, match="the run failed"):
        failing_run()
    assert running[0] > 0
    assert _workers() == []
    assert head_start.take(store.engine, list(head_start.readable_blobs(repo, sha)), LIMITS) is None
    with store.engine.connect() as conn:
        assert conn.execute(sa.text("select count(*) from parsed_blob")).scalar_one() == 0


def test_kb_index_parses_ahead_and_publishes_what_an_index_without_it_publishes(
    kb_env: KbEnv, other_env: KbEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``kb index`` starts the parse before its run and its ``code_spans`` step takes it; the
    summary counts those blobs as parsed, and the export equals that of an index on another store
    with no head start."""
    path, repo, sha = _repo(tmp_path)
    taken: list[bool] = []
    real_take = head_start.take

    def recorded(engine: sa.Engine, blob_ids: list[str], limits: ParseLimits) -> Parsing | None:
        found = real_take(engine, blob_ids, limits)
        taken.append(found is not None)
        return found

    monkeypatch.setattr(head_start, "take", recorded)
    without = other_env.kb("index", path)
    assert without.code == 0, without.stderr
    assert taken  # each parse asks
    assert not any(taken)  # and none finds one
    taken.clear()
    _any_size(monkeypatch)
    ahead = kb_env.kb("index", path)
    assert ahead.code == 0, ahead.stderr
    assert taken[0]  # the step's parse takes it
    assert not any(taken[1:])  # once
    files = len(repo.python_files(sha))
    assert f"({files} parsed, 0 reused)" in ahead.stdout
    assert ahead.stdout == without.stdout
    assert kb_env.kb("export", path).stdout == other_env.kb("export", path).stdout
    assert _workers() == []
