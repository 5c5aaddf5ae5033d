"""Blobs' facts decoded in a thread while the parse step runs (``predecode``): a full parse's own
blobs, and the cached ones a process's first load would read back. The program the load makes
from them is the one it makes from the store, a thread runs only for a run that loads the
program next and many blobs, and no copy is forked beside it."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from kb_assets.core import forked
from kb_assets.core.blobs import analyze_blob, decode_facts, encode_blob
from kb_assets.core.extractors.registry import COLLECTORS, EXTRACTORS, parser_version
from kb_assets.core.models import EncodedBlob
from kb_assets.core.spans import ParseLimits
from kb_assets.indexing import extract, predecode, prefetch
from kb_assets.indexing.load import forget_programs, load_program
from kb_resources.git.repo import GitRepo
from kb_resources.settings import load_settings
from kb_resources.store import reads, writes
from kb_resources.store.engine import Store, open_store
from tests.gitfixtures import build_repo
from tests.kbfixtures import KbEnv

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SOURCE = (
    b"import os\n\n\nclass A:\n    def f(self, x):\n        return os.path.join(x, g(x))\n\n\n"
    b"def g(y):\n    return y\n"
)


def _encoded(count: int) -> list[EncodedBlob]:
    """``count`` parsed blobs with distinct ids (the same small module each)."""
    parsed = encode_blob(analyze_blob("0" * 40, SOURCE, EXTRACTORS, ParseLimits(), COLLECTORS))
    return [
        EncodedBlob(f"{n:040x}", parsed.spans, parsed.facts, parsed.gaps, parsed.line_count)
        for n in range(count)
    ]


def _taken(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, predecode.Loaded]]:
    """What every ``predecode.take`` hands over, from now on."""
    taken: list[dict[str, predecode.Loaded]] = []
    real = predecode.take

    def recorded(engine: sa.Engine, blob_ids: Any) -> dict[str, predecode.Loaded]:
        found = real(engine, blob_ids)
        taken.append(found)
        return found

    monkeypatch.setattr(predecode, "take", recorded)
    return taken


def _reading(monkeypatch: pytest.MonkeyPatch) -> list[tuple[list[str], bool]]:
    """The blob ids every ``predecode.start_reading`` is asked for, and whether it started."""
    calls: list[tuple[list[str], bool]] = []
    real = predecode.start_reading

    def recorded(engine: sa.Engine, blob_ids: Any, *, workers: int) -> bool:
        started = real(engine, blob_ids, workers=workers)
        calls.append((list(blob_ids), started))
        return started

    monkeypatch.setattr(predecode, "start_reading", recorded)
    return calls


def _indexed(kb_env: KbEnv, path: Path, sha: str) -> tuple[GitRepo, sa.Engine, set[str]]:
    """``kb index`` the repository at ``path`` (it must succeed); the repository, its store's
    engine and the blob ids of the ``.py`` files of ``sha``."""
    indexed = kb_env.kb("index", path)
    assert indexed.code == 0, indexed.stderr
    repo = GitRepo.open(path)
    engine = open_store(load_settings(kb_env.environ), repo.key()).engine
    with engine.connect() as conn:
        return repo, engine, {f.blob_id for f in reads.commit_files(conn, sha) if f.path.endswith(".py")}


def _assert_staged_as_recomputed(repo: GitRepo, engine: sa.Engine, sha: str) -> None:
    """Each extractor's staged ids at ``sha`` are those recomputed from a program loaded from the
    store, in a fresh state (nothing kept, nothing decoded ahead)."""
    forget_programs()
    program = load_program(repo, engine, sha, limits=ParseLimits(), workers=1)
    with engine.connect() as conn:
        for extractor in EXTRACTORS:
            expected = {a.artifact_id for a in extract.run_extractor(extractor, program).artifacts}
            assert set(reads.staged_artifact_ids(conn, sha, extractor.extractor_id)) == expected


def test_an_index_whose_facts_were_decoded_ahead_stages_what_a_load_from_the_store_makes(
    kb_env: KbEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``kb index`` of a fixture, its parse decoded by the thread (every parsed blob handed to the
    load): each extractor's staged ids are exactly those recomputed from a program loaded from the
    store afterwards, without the thread."""
    monkeypatch.setattr(predecode, "PREDECODE_MIN_BLOBS", 1)
    kb_env.extra["KB_WORKERS"] = "2"
    taken = _taken(monkeypatch)
    sha = build_repo(FIXTURES / "calls_oracle", tmp_path / "repo")[-1]
    repo, engine, parsed = _indexed(kb_env, tmp_path / "repo", sha)
    assert [set(found) for found in taken if found] == [parsed]
    _assert_staged_as_recomputed(repo, engine, sha)


def test_the_decoded_facts_are_the_loads_own_and_handed_over_once(store: Store) -> None:
    """Each blob comes back with its spans and the facts ``decode_facts`` makes; a second ``take``
    finds nothing; a store other than the parse's gets nothing."""
    blobs = _encoded(predecode.PREDECODE_MIN_BLOBS)
    ids = [b.blob_id for b in blobs]
    with prefetch.prefetching():
        assert predecode.start(store.engine, blobs, workers=2)
    other = sa.create_engine("postgresql+psycopg://nobody@/elsewhere")
    assert predecode.take(other, ids) == {}
    with prefetch.prefetching():
        predecode.start(store.engine, blobs, workers=2)
    found = predecode.take(store.engine, ids[:3])
    assert found == {b.blob_id: (b.spans, decode_facts(b.facts)) for b in blobs[:3]}
    assert predecode.take(store.engine, ids) == {}


@pytest.mark.parametrize(
    ("active", "workers", "count"),
    [(False, 2, 500), (True, 1, 500), (True, 2, 10)],
    ids=["no-run-loads-next", "one-core", "few-blobs"],
)
def test_nothing_is_decoded_ahead_for_a_load_that_does_not_follow_or_would_not_gain(
    store: Store, active: bool, workers: int, count: int
) -> None:
    """Outside a run that executes every step here (``prefetch.active``), on one worker, or for a
    few blobs, no thread is started and the load decodes everything itself."""
    blobs = _encoded(count)
    if active:
        with prefetch.prefetching():
            started = predecode.start(store.engine, blobs, workers=workers)
    else:
        started = predecode.start(store.engine, blobs, workers=workers)
    assert not started
    assert predecode.take(store.engine, [b.blob_id for b in blobs]) == {}


def test_a_fork_waits_for_the_decoding_thread(store: Store) -> None:
    """``forked.can_fork`` first waits for the thread (``settle_before_fork``): when it answers,
    whatever it answers, the thread has ended and what it decoded is still there to be taken."""
    blobs = _encoded(3000)
    with prefetch.prefetching():
        assert predecode.start(store.engine, blobs, workers=2)
    forked.can_fork()
    assert [t for t in threading.enumerate() if t.name == "kb-predecode"] == []
    assert len(predecode.take(store.engine, [b.blob_id for b in blobs])) == len(blobs)


def test_a_decoding_that_fails_leaves_the_load_to_decode(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A thread that fails hands over nothing (the load then decodes the blobs itself, and meets
    the error there if it is real)."""

    def broken(data: bytes) -> dict[str, Any]:
        raise ValueError("corrupt")

    monkeypatch.setattr(predecode, "decode_facts", broken)
    blobs = _encoded(predecode.PREDECODE_MIN_BLOBS)
    with prefetch.prefetching():
        assert predecode.start(store.engine, blobs, workers=2)
    assert predecode.take(store.engine, [b.blob_id for b in blobs]) == {}


def _one_file_commit(repo: Path) -> str:
    """Change one module of ``repo`` and commit it; the new sha."""
    target = sorted(repo.glob("**/*.py"))[0]
    target.write_text(target.read_text() + "\n\ndef added_here():\n    return 1\n")
    git = ["git", "-C", str(repo)]
    subprocess.run([*git, "commit", "-qam", "one file"], check=True)
    return subprocess.run(
        [*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()


def test_a_cold_index_of_a_one_file_commit_reads_the_cached_facts_ahead(
    kb_env: KbEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that loads its first program for an incremental commit (the fixture indexed, then
    one file changed, with nothing kept in memory as in a new ``kb index``) gets every cached blob
    of the commit decoded by the reading thread, the changed one from its own parse, and stages
    what a program loaded from the store recomputes; a second commit in the same process keeps
    those blobs and reads nothing ahead."""
    monkeypatch.setattr(predecode, "PREDECODE_MIN_BLOBS", 1)
    kb_env.extra["KB_WORKERS"] = "2"
    build_repo(FIXTURES / "calls_oracle", tmp_path / "repo")
    assert kb_env.kb("index", tmp_path / "repo").code == 0
    forget_programs()
    taken = _taken(monkeypatch)
    reading = _reading(monkeypatch)
    sha = _one_file_commit(tmp_path / "repo")
    repo, engine, blobs = _indexed(kb_env, tmp_path / "repo", sha)
    assert [set(found) for found in taken if found] == [blobs]
    read = [set(ids) for ids, started in reading if started]
    assert len(read) == 1
    assert len(blobs - read[0]) == 1  # all but the changed file's blob, which the step parsed
    reading.clear()
    _one_file_commit(tmp_path / "repo")
    assert kb_env.kb("index", tmp_path / "repo").code == 0
    assert reading  # asked, and ...
    assert not any(started for _, started in reading)  # ... the last commit's blobs are kept
    _assert_staged_as_recomputed(repo, engine, sha)


def test_the_cached_blobs_and_the_parses_own_are_both_taken(store: Store) -> None:
    """The reading decoding (the cached blobs) and the parse's (its own) may both be under way;
    the load takes from both."""
    blobs = _encoded(predecode.PREDECODE_MIN_BLOBS * 2)
    with store.engine.begin() as conn:
        writes.insert_encoded_blobs(conn, parser_version(), blobs[: predecode.PREDECODE_MIN_BLOBS])
    with prefetch.prefetching():
        cached = [b.blob_id for b in blobs[: predecode.PREDECODE_MIN_BLOBS]]
        assert predecode.start_reading(store.engine, cached, workers=2)
        assert predecode.start(store.engine, blobs[predecode.PREDECODE_MIN_BLOBS :], workers=2)
    found = predecode.take(store.engine, [b.blob_id for b in blobs])
    assert found == {b.blob_id: (b.spans, decode_facts(b.facts)) for b in blobs}
