"""The reproducibility gates in their two shapes: a stored sample on the hot path of a large
commit, and the full recomputation of every extractor in ``verify_commit`` (``kb verify``).

"Large" is decided by ``KB_VERIFY_MAX_FILES``; these tests set it to 0 so a small fixture takes the
large-commit path, and then prove that each gate fails on the defect it exists for.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from kb_assets.core.callgraph import graph as callgraph
from kb_assets.core.extractors.calls import CallsExtractor
from kb_assets.core.extractors.imports import EXTRACTOR_ID as IMPORTS_ID
from kb_assets.core.extractors.registry import extractor
from kb_assets.core.program import Program
from kb_assets.core.spans import ParseLimits
from kb_gates import gates
from kb_gates.history import stable_sample
from kb_resources.git.repo import GitRepo
from kb_resources.settings import load_settings
from kb_resources.store import reads, writes
from kb_resources.store.engine import open_store
from kb_resources.store.schema import artifact, artifact_derived_from
from tests.gitfixtures import build_repo, commit_tree, init_repo
from tests.kbfixtures import KbEnv

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.fixture
def large(kb_env: KbEnv, tmp_path: Path) -> tuple[KbEnv, Path, str]:
    """The import-oracle fixture, indexed as if it were larger than KB_VERIFY_MAX_FILES."""
    shas = build_repo(FIXTURES / "imports_oracle", tmp_path / "shop")
    kb_env.extra["KB_VERIFY_MAX_FILES"] = "0"
    indexed = kb_env.kb("index", tmp_path / "shop")
    assert indexed.code == 0, indexed.stderr
    return kb_env, tmp_path / "shop", shas[-1]


def _engine_of(env: KbEnv, repo: Path) -> sa.Engine:
    return open_store(load_settings(env.environ), GitRepo.open(repo).key()).engine


def _tamper_first_import_edge(engine: sa.Engine, sha: str) -> str:
    """Alter the stored payload of the commit's first staged import edge; its id."""
    with engine.connect() as conn:
        victim = reads.staged_artifact_ids(conn, sha, IMPORTS_ID)[0]
    with engine.begin() as conn:
        conn.execute(
            sa.update(artifact)
            .where(artifact.c.artifact_id == victim)
            .values(payload=artifact.c.payload.op("||")(sa.text("""'{"tampered": true}'::jsonb""")))
        )
    return victim


def test_stored_sample_recomputes_the_staged_ids(large: tuple[KbEnv, Path, str]) -> None:
    """On a large commit the blocking check recomputes ids from stored records: they match."""
    env, repo, sha = large
    engine = _engine_of(env, repo)
    with engine.connect() as conn:
        staged = reads.staged_artifact_ids(conn, sha, IMPORTS_ID)
    assert staged
    whole = gates.stored_ids_diff(engine, sha, IMPORTS_ID, sample=-1)
    assert whole.equal, whole.evidence()
    assert whole.matched == len(staged)
    with engine.connect() as conn:  # the server picks the sample exactly as the Python rule does
        for size in (0, 2, 5, -1):
            picked = reads.staged_sample(conn, sha, IMPORTS_ID, size)
            assert set(picked) == set(stable_sample(sha, staged, size))
            assert len(picked) == len(set(picked))
    part = gates.stored_ids_diff(engine, sha, IMPORTS_ID, sample=2)
    assert part.equal
    assert part.matched == min(2, len(staged))


def test_stored_sample_fails_on_a_record_that_no_longer_matches_its_id(
    large: tuple[KbEnv, Path, str],
) -> None:
    """A stored payload that changed after its id was computed is caught by the sample check."""
    env, repo, sha = large
    engine = _engine_of(env, repo)
    victim = _tamper_first_import_edge(engine, sha)
    diff = gates.stored_ids_diff(engine, sha, IMPORTS_ID, sample=-1)
    assert not diff.equal
    assert victim in diff.missing


def test_stored_sample_fails_on_a_grounding_row_stored_twice(large: tuple[KbEnv, Path, str]) -> None:
    """The grounding table keeps no key (migration 0009): a row stored a second time, which an id
    made of distinct rows would not show, is caught by the sample check, naming the artifact."""
    env, repo, sha = large
    engine = _engine_of(env, repo)
    with engine.connect() as conn:
        victim = reads.staged_artifact_ids(conn, sha, IMPORTS_ID)[0]
    d = artifact_derived_from.c
    with engine.begin() as conn:
        first = sa.select(d.artifact_id, d.span_id, d.path, d.role).where(d.artifact_id == victim).limit(1)
        conn.execute(
            sa.insert(artifact_derived_from).from_select(["artifact_id", "span_id", "path", "role"], first)
        )
    diff = gates.stored_ids_diff(engine, sha, IMPORTS_ID, sample=-1)
    assert not diff.equal
    assert victim in diff.missing
    assert f"{victim} has a grounding row stored twice" in diff.extra
    assert diff.missing == frozenset({victim})  # only the victim is off


def test_stored_sample_takes_a_span_occurring_twice_for_one_row(kb_env: KbEnv, tmp_path: Path) -> None:
    """Two identical import statements in one file are one span at two places: once the snapshot
    is published, an edge grounded on it reads back with a line range for each place. That is
    one grounding row, not a row stored twice. Indexing a published commit again failed its
    blocking check on Django, whose ``django/test/signals.py`` imports ``trans_real`` twice in
    one function."""
    repo = init_repo(tmp_path / "twice")
    branch = "    if {0}:\n        from shop import util\n\n        util.helper()\n"
    files = {
        "shop/__init__.py": "",
        "shop/util.py": "def helper():\n    return 1\n",
        "shop/tasks.py": "def run(a, b):\n" + branch.format("a") + branch.format("b"),
    }
    sha = commit_tree(repo, files, "twice")
    kb_env.extra["KB_VERIFY_MAX_FILES"] = "0"
    indexed = kb_env.kb("index", repo)
    assert indexed.code == 0, indexed.stderr
    engine = _engine_of(kb_env, repo)
    with engine.connect() as conn:
        staged = reads.staged_artifact_ids(conn, sha, IMPORTS_ID)
        records = reads.records_by_id(conn, sha, staged)
    lines = [
        (g.start_line, g.end_line) for r in records.values() for g in r.grounding if g.path == "shop/tasks.py"
    ]
    assert sorted(lines) == [(3, 3), (7, 7)]  # one row, placed at both statements
    for extractor_id in (IMPORTS_ID, CallsExtractor.extractor_id):
        diff = gates.stored_ids_diff(engine, sha, extractor_id, sample=-1)
        assert diff.equal, diff.evidence()
    again = kb_env.kb("index", repo, "--full")  # its checks read the published snapshot
    assert again.code == 0, again.stderr


def test_verify_recomputes_every_extractor(large: tuple[KbEnv, Path, str]) -> None:
    """``kb verify`` runs the full recomputation the index run deferred; it passes on a sound
    snapshot and fails, naming the extractor, when the staged ids are not what resolution yields."""
    env, repo, sha = large
    verified = env.kb("verify", repo)
    assert verified.code == 0, verified.stderr
    assert "oracle_agreement.extractions_reproducible: passed" in verified.stdout
    engine = _engine_of(env, repo)
    with engine.begin() as conn:
        dropped, *kept = reads.staged_artifact_ids(conn, sha, IMPORTS_ID)
        writes.replace_staged(conn, sha, IMPORTS_ID, kept)
    diffs = gates.extractions_diff(GitRepo.open(repo), engine, sha, limits=ParseLimits(), workers=0)
    assert {name for name, d in diffs.items() if not d.equal} == {IMPORTS_ID}
    assert diffs[IMPORTS_ID].extra == {dropped}
    failed = env.kb("verify", repo)
    assert failed.code == 1
    assert "check failed: oracle_agreement.extractions_reproducible" in failed.stderr
    assert IMPORTS_ID in failed.stderr


def test_large_commit_is_blocked_when_a_stored_record_no_longer_matches(
    large: tuple[KbEnv, Path, str],
) -> None:
    """Re-indexing the large commit runs ``ids_reproducible`` on the stored sample: a record that
    was altered in the store stops the run (a recomputation alone would not notice: it yields the
    same ids, and the altered row is not rewritten)."""
    env, repo, sha = large
    engine = _engine_of(env, repo)
    victim = _tamper_first_import_edge(engine, sha)
    again = env.kb("index", repo)
    assert again.code != 0
    assert "import_edges.ids_reproducible" in again.stderr
    assert victim[:12] in again.stderr or victim in again.stderr


def test_the_recomputation_resolves_again(
    kb_env: KbEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The full recomputation resolves the commit again instead of reusing what this process
    remembers for the program it loaded (the call graph, the symbol table): with the index run's
    program and graph still in memory (the run itself took the stored-sample path), recomputing
    the call edges builds one new call graph, which a second recomputation of the run shares."""
    repo = tmp_path / "calls"
    sha = build_repo(FIXTURES / "calls_oracle", repo)[-1]
    kb_env.extra["KB_VERIFY_MAX_FILES"] = "0"
    assert kb_env.kb("index", repo, "--no-verify").code == 0  # in this process: program and graph kept
    built: list[object] = []
    real_build = callgraph.build

    def counting_build(program: Program) -> callgraph.CallGraph:
        built.append(program)
        return real_build(program)

    monkeypatch.setattr(callgraph, "build", counting_build)
    engine = _engine_of(kb_env, repo)
    for _ in range(2):
        diff = gates.reproducibility_diff(
            GitRepo.open(repo), engine, sha, extractor("calls"), limits=ParseLimits(), workers=0
        )
        assert diff.equal, diff.evidence()
        assert diff.matched > 0
    assert len(built) == 1
