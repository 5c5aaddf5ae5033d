"""Call edges carried between commits (``kb watch``): an edge reused by id is exactly the edge a
cold extraction builds, an edge whose spans changed anywhere is drafted again, and an id the
store lacks is never staged.
"""

from __future__ import annotations

import io
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import sqlalchemy as sa

from kb_assets.cli.instance import open_instance
from kb_assets.core.callgraph import resolutions
from kb_assets.core.callgraph.graph import call_graph, kept_resolutions
from kb_assets.core.extractors import call_carry
from kb_assets.core.extractors.base import Draft
from kb_assets.core.extractors.call_carry import EdgeCarry
from kb_assets.core.extractors.calls import CallsExtractor, logical_key
from kb_assets.core.extractors.entities import EntitiesExtractor
from kb_assets.core.grounding import artifact_batches
from kb_assets.core.models import Artifact
from kb_assets.core.program import Program
from kb_assets.core.spans import ParseLimits
from kb_assets.indexing import carries, extract
from kb_assets.indexing.load import forget_programs, load_program
from kb_assets.indexing.resolution_files import ResolutionFile, resolutions_file
from kb_resources.git.repo import GitRepo
from kb_resources.settings import load_settings
from kb_resources.store import bulk, reads
from kb_resources.store.engine import open_store
from tests.gitfixtures import commit_tree, init_repo
from tests.kbfixtures import KbEnv
from tests.programs import program_from_files
from tests.spawned import counting_forks, run_spawned

V1 = {
    "pkg/__init__.py": "from pkg.impl import helper\n",
    "pkg/impl.py": "def helper(x):\n    return x + 1\n\ndef other():\n    return 2\n",
    "pkg/use.py": (
        "from pkg import helper\nfrom pkg.impl import other\n\n"
        "def run():\n    helper(1)\n    other()\n\n"
        "class Job:\n    def go(self):\n        run()\n        self.stop()\n\n"
        "    def stop(self):\n        other()\n"
    ),
    "pkg/side.py": "from pkg.use import Job\n\ndef main():\n    Job().go()\n",
}
"""Four files: ``use`` calls into ``impl`` directly and through the package's re-export."""

EDITS: list[tuple[str, Mapping[str, str]]] = [
    ("a file no edge reads", {"pkg/side.py": V1["pkg/side.py"] + "\ndef extra():\n    main()\n"}),
    ("a callee's body, its caller untouched", {"pkg/impl.py": V1["pkg/impl.py"].replace("x + 1", "x + 2")}),
    ("the re-export read on the way", {"pkg/__init__.py": "from pkg.impl import helper, other\n"}),
    ("a caller", {"pkg/use.py": V1["pkg/use.py"].replace("    other()\n\n", "    other()\n    run()\n\n")}),
    (
        "a method loses a call and gains two",
        {
            "pkg/use.py": V1["pkg/use.py"]
            .replace("    other()\n\n", "    other()\n    run()\n\n")
            .replace("        self.stop()\n", "        helper(2)\n        other()\n")
        },
    ),
]
"""One change per commit, each on top of the previous one."""


def _built(program: Program, drafts: Sequence[Draft]) -> list[Artifact]:
    """The drafts' artifacts in draft order, as the writer builds them."""
    batches = artifact_batches(drafts, extractor_id="calls", extractor_version="1", program=program, size=100)
    return [a for batch in batches for a in batch]


def _cold(files: Mapping[str, str]) -> dict[str, str]:
    """Logical key → id of every call edge of a fresh program of ``files`` (no carry)."""
    program = program_from_files(files)
    drafts = CallsExtractor().resolve(program).drafts
    return {a.logical_key: a.artifact_id for a in _built(program, drafts)}


def _versions() -> Iterator[tuple[str, dict[str, str]]]:
    files = dict(V1)
    yield "the first commit", dict(files)
    for label, edit in EDITS:
        files.update(edit)
        yield label, dict(files)


@pytest.mark.parametrize("incremental", [False, True], ids=["full-graphs", "incremental-graphs"])
def test_each_commit_through_the_carry_has_exactly_the_cold_ids(incremental: bool) -> None:
    """Commit after commit, the drafted edges' ids plus the reused ids are the cold extraction's
    ids, and something is reused once there is a previous commit; also when each commit's graph
    is built from the last one's resolutions, as under ``kb watch`` (the carry then takes the
    unchanged edges' remembered signatures instead of making them again)."""
    versions = [(label, files, _cold(files)) for label, files in _versions()]  # not kept: made first
    carry = EdgeCarry()
    with kept_resolutions() if incremental else nullcontext():
        for n, (label, files, cold) in enumerate(versions):
            program = program_from_files(files, sha=f"{n + 1:040x}")
            carried = carry.resolve(program)
            since = call_graph(program).since
            assert since == (f"{n:040x}" if incremental and n > 0 else None), label
            made = [a.artifact_id for a in _built(program, carried.extraction.drafts)]
            carry.remember(program, made)
            assert set(made) | set(carried.reused) == set(cold.values()), label
            assert len(made) + len(carried.reused) == len(cold), label
            assert bool(carried.reused) == (n > 0), label


def test_a_graph_replayed_from_the_remembered_commit_is_carried_as_a_delta(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Under ``kept_resolutions`` (``kb watch``) every commit after the first is resolved as a
    delta of the remembered edges (``edge_delta``: edges added, removed and touched by a changed
    file), never by looking at every edge, and its drafted plus reused ids are the cold ids,
    commit after commit: edges added, removed, and re-grounded through another file."""
    looked: list[str] = []
    real = EdgeCarry._looked_at

    def counted(self: EdgeCarry, program: Program, *args: Any, **kwargs: Any) -> Any:
        looked.append(program.sha)
        return real(self, program, *args, **kwargs)

    monkeypatch.setattr(EdgeCarry, "_looked_at", counted)
    versions = [(label, files, _cold(files)) for label, files in _versions()]  # not kept: made first
    carry = EdgeCarry()
    previous: set[str] = set()
    with kept_resolutions():
        for n, (label, files, cold) in enumerate(versions):
            program = program_from_files(files, sha=f"{n + 1:040x}")
            carried = carry.resolve(program)
            made = [a.artifact_id for a in _built(program, carried.extraction.drafts)]
            carry.remember(program, made)
            if n % 2:
                carry.prepare()  # the files' index made ahead, as a watch does between rounds
            assert sorted(made + list(carried.reused)) == sorted(cold.values()), label
            assert set(carried.reused) <= previous, label
            assert carried.reused or n == 0, label
            assert list(carried.reused) == sorted(carried.reused), label  # a delta's come sorted
            previous = set(cold.values())
    assert looked == [f"{1:040x}"]
    assert carry.remembered is not None
    assert sorted(carry.remembered[1]) == sorted(previous)


def test_an_edge_into_a_changed_file_is_drafted_again_though_its_caller_is_replayed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The delta does not rest on the graph's rule of which files to resolve again: with that
    rule narrowed to the changed file alone, the callers' logs are replayed and their edges are
    not in ``CallGraph.changed``, yet an edge whose callee's span changed with the file is found
    through the files' index (``edge_delta.touching``) and drafted again: the cold ids."""
    real = resolutions.stale

    def only_the_changed_file(previous: Any, program: Program, *args: Any) -> set[str] | None:
        found = real(previous, program, *args)
        changed = {p for p, source in program.files.items() if previous.blobs.get(p) != source.blob_id}
        return None if found is None else found & changed

    monkeypatch.setattr(resolutions, "stale", only_the_changed_file)
    before, after = V1, {**V1, **EDITS[1][1]}
    cold = _cold(after)
    carry = EdgeCarry()
    with kept_resolutions():
        _remembered(carry, before)
        program = program_from_files(after, sha="2" * 40)
        carried = carry.resolve(program)
        graph = call_graph(program)
        assert graph.since is not None
        assert ("pkg.use.run", "pkg.impl.helper") not in graph.changed
        drafted = {d.logical_key for d in carried.extraction.drafts}
        assert logical_key("pkg.use.run", "pkg.impl.helper") in drafted
        made = [a.artifact_id for a in _built(program, carried.extraction.drafts)]
    assert sorted(made + list(carried.reused)) == sorted(cold.values())


def _counted_signatures(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Each edge ``call_carry.signature`` signs from now on (cleared by the caller as it likes)."""
    signed: list[object] = []
    real = call_carry.signature

    def counted(edge: Any, vias: dict[Any, str]) -> bytes:
        signed.append(edge)
        return real(edge, vias)

    monkeypatch.setattr(call_carry, "signature", counted)
    return signed


def test_a_carry_read_back_from_its_file_vouches_for_the_same_signatures(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A carry written out and read back, as each ``kb index`` does between runs, knows its commit:
    on a graph replayed from that commit's resolutions it makes the same few signatures as the
    carry kept in memory (not one per edge), and reuses and drafts exactly the same edges."""
    signatures = _counted_signatures(monkeypatch)
    kept, written = EdgeCarry(), EdgeCarry()
    with kept_resolutions():
        for n, (label, files) in enumerate(_versions()):
            program = program_from_files(files, sha=f"{n + 1:040x}")
            written = EdgeCarry.load(io.BytesIO(b"".join(written.dump())))
            kept.prepare()  # as ``kb watch`` does once a commit is published: not counted here
            signed: list[int] = []
            results = []
            for carry in (kept, written):
                signatures.clear()
                results.append(carry.resolve(program))
                signed.append(len(signatures))
            in_memory, from_file = results
            assert sorted(from_file.reused) == list(in_memory.reused), label  # a delta's come sorted
            assert _draft_keys(from_file) == _draft_keys(in_memory), label
            assert signed[0] == signed[1], label
            if n > 0:
                assert signed[1] < len(call_graph(program).edges), label
            for carry, carried in zip((kept, written), results, strict=True):
                carry.remember(program, [a.artifact_id for a in _built(program, carried.extraction.drafts)])


def test_remember_only_notes_the_commit_and_settle_packs_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """``remember`` (on a commit's way to its snapshot) signs nothing; ``settle`` signs the drafted
    edges and packs their ids, the cold ids; after ``prepare`` the next ``resolve`` signs no more
    than a carry read back from the file does. A drafted count that is not the resolved one still
    forgets."""
    signatures = _counted_signatures(monkeypatch)
    program = program_from_files(V1, sha="1" * 40)
    carry = EdgeCarry()
    made = [a.artifact_id for a in _built(program, carry.resolve(program).extraction.drafts)]
    carry.remember(program, made)
    assert (len(signatures), carry.remembers) == (0, True)
    carry.prepare()
    assert len(signatures) == len(made) == len(_cold(V1)) > 0
    remembered = carry.remembered
    assert remembered is not None
    assert remembered[0] == program.sha
    assert sorted(remembered[1]) == sorted(_cold(V1).values())
    packed = EdgeCarry.load(io.BytesIO(b"".join(carry.dump())))
    assert len(signatures) == len(made)  # dumped as it was packed
    changed = program_from_files({**V1, **EDITS[0][1]}, sha="2" * 40)
    counts = []
    for each in (packed, carry):  # the one read back had nothing left to pack; nor has this one
        signatures.clear()
        each.resolve(changed)
        counts.append(len(signatures))
    assert counts[0] == counts[1] > 0
    carry.remember(changed, [])  # fewer ids than drafted edges: not the run resolved
    assert not carry.remembers
    assert carry.remembered is None


def _remembered_through(directory: str, how: str) -> dict[str, Any]:
    """In a spawned process (one thread, so a copy can be forked): two commits through a carry
    read from a file, each written back by ``carries.remembering`` around a stand-in for the
    staging, the copy working (``fork``), failing in the copy (``fail``) or not allowed
    (``inline``: one worker). The file after each commit, and whether a copy was made."""
    from kb_assets.core import forked

    path = Path(directory) / how / "repo.calls"
    made = counting_forks()
    if how == "inline":
        forked.set_workers(1)
    if how == "fail":
        real = carries._remember_and_keep

        def broken(carry: EdgeCarry, program: Program, drafted: Sequence[str], path: Path | None) -> bool:
            if forked._in_copy:
                raise RuntimeError("the copy fails")
            return real(carry, program, drafted, path)

        carries._remember_and_keep = broken
    files: list[bytes] = []
    reused: list[int] = []
    for n, (_, version) in enumerate(list(_versions())[:2]):
        program = program_from_files(version, sha=f"{n + 1:040x}")
        carry = carries.open_carry(CallsExtractor(), path)
        assert carry is not None
        carried = carry.resolve(program)
        reused.append(len(carried.reused))
        drafted = [a.artifact_id for a in _built(program, carried.extraction.drafts)]
        with carries.remembering(carry, program, drafted, path, "a store"):
            pass  # the staging
        files.append(path.read_bytes())
    return {"files": files, "made": made, "reused": reused}


def test_a_carry_from_the_file_is_written_back_by_a_forked_copy_or_by_the_run(tmp_path: Path) -> None:
    """Outside a watch the carry is remembered and written by a forked copy while the run
    stages; the file is the same, byte for byte, when the copy fails or cannot be made and the
    run does it itself, and the second commit reuses edges through it."""
    found = {how: run_spawned(_remembered_through, str(tmp_path), how) for how in ("fork", "fail", "inline")}
    assert found["fork"]["made"] == [True, True]
    assert found["fail"]["made"] == [True, True]
    assert found["inline"]["made"] == [False, False]
    assert found["fork"]["files"] == found["fail"]["files"] == found["inline"]["files"]
    for how in ("fork", "fail", "inline"):
        assert found[how]["reused"][0] == 0
        assert found[how]["reused"][1] > 0
    assert EdgeCarry.load(io.BytesIO(found["fork"]["files"][-1])).remembers


def _draft_keys(carried: call_carry.Carried) -> list[str]:
    return [draft.logical_key for draft in carried.extraction.drafts]


def _remembered(carry: EdgeCarry, files: Mapping[str, str]) -> None:
    """One commit through the carry, its edges remembered as a finished run does."""
    program = program_from_files(files)
    drafts = carry.resolve(program).extraction.drafts
    carry.remember(program, [a.artifact_id for a in _built(program, drafts)])


def _edge_ids(files: Mapping[str, str], caller: str, callee: str) -> str:
    return _cold(files)[logical_key(caller, callee)]


@pytest.mark.parametrize(
    ("edit", "caller", "callee"),
    [
        (2, "pkg.use.run", "pkg.impl.helper"),
        (3, "pkg.use.run", "pkg.impl.helper"),
    ],
    ids=["callee-body", "re-export"],
)
def test_an_edge_whose_span_changed_in_another_file_is_drafted_again(
    edit: int, caller: str, callee: str
) -> None:
    """The caller's file is untouched and the edge's fields are equal, but a span it is grounded
    on (the callee's definition, the re-export it was resolved through) changed: the edge is
    drafted again and gets its new id, not the remembered one."""
    versions = list(_versions())
    before, after = versions[edit - 1][1], versions[edit][1]
    old, new = _edge_ids(before, caller, callee), _edge_ids(after, caller, callee)
    assert old != new, "the edit must change the edge's identity for this test to mean anything"
    assert before["pkg/use.py"] == after["pkg/use.py"]
    carry = EdgeCarry()
    _remembered(carry, before)
    program = program_from_files(after)
    carried = carry.resolve(program)
    drafted = {d.logical_key for d in carried.extraction.drafts}
    assert logical_key(caller, callee) in drafted
    assert old not in carried.reused
    assert new in {a.artifact_id for a in _built(program, carried.extraction.drafts)}


def test_an_unfinished_commit_is_not_remembered() -> None:
    """``remember`` for another program than the last resolved one forgets everything (a run that
    failed between the two must not leave half a carry)."""
    carry = EdgeCarry()
    _remembered(carry, V1)
    assert carry.resolve(program_from_files(V1)).reused
    carry.remember(program_from_files(V1), [])
    assert not carry.resolve(program_from_files(V1)).reused


def test_ids_that_do_not_match_the_drafts_are_not_remembered() -> None:
    """One id too few or too many for the drafted edges: the run is not the one resolved, and the
    next commit reuses nothing."""
    for extra in ([], ["f" * 64, "e" * 64]):
        carry = EdgeCarry()
        program = program_from_files(V1)
        drafts = carry.resolve(program).extraction.drafts
        ids = [a.artifact_id for a in _built(program, drafts)]
        carry.remember(program, ids[:-1] if not extra else ids + extra)
        assert not carry.resolve(program_from_files(V1)).reused


def test_a_watch_keeps_its_carry_in_memory_and_reads_the_file_once(tmp_path: Path) -> None:
    """Within ``carried_between_commits`` the first commit's carry comes from the file and every
    later commit gets that same object back, whatever the file holds meanwhile; outside it, every
    run reads the file again. Other extractors have no carry."""
    path = tmp_path / "carry" / "repo.calls"
    made = EdgeCarry()
    _remembered(made, V1)
    assert carries.keep_carry(made, path)
    with carries.carried_between_commits():
        kept = carries.open_carry(CallsExtractor(), path)
        assert kept is not None
        assert kept.resolve(program_from_files(V1)).reused
        path.write_bytes(b"not a carry")
        assert carries.open_carry(CallsExtractor(), path) is kept
        assert carries.open_carry(EntitiesExtractor(), path) is None
    outside = carries.open_carry(CallsExtractor(), path)
    assert outside is not None
    assert outside is not kept
    assert not outside.resolve(program_from_files(V1)).reused


def _staged_kept(kept: EdgeCarry, files: Mapping[str, str], path: Path) -> None:
    """One commit of ``files`` through a watch's kept carry, around a stand-in for the staging."""
    program = program_from_files(files)
    drafts = kept.resolve(program).extraction.drafts
    with carries.remembering(kept, program, [a.artifact_id for a in _built(program, drafts)], path, "store"):
        pass


def test_a_watch_writes_its_kept_carry_once_its_round_is_published(tmp_path: Path) -> None:
    """Within ``carried_between_commits`` a commit's staging leaves the kept carry remembering it
    and the file as it was; ``write_kept`` (the end of a watch's round) writes it once, and
    leaving the watch writes what is still unwritten."""
    path = tmp_path / "carry" / "repo.calls"
    side = {**V1, **EDITS[0][1]}
    with carries.carried_between_commits():
        kept = carries.open_carry(CallsExtractor(), path)
        assert kept is not None
        _staged_kept(kept, V1, path)
        assert kept.remembers
        assert not path.exists()
        carries.write_kept()
        assert path.is_file()
        path.unlink()
        carries.write_kept()  # nothing new since
        assert not path.exists()
        _staged_kept(kept, side, path)
        assert not path.exists()
    read = carries.open_carry(CallsExtractor(), path)
    assert read is not None
    assert read.resolve(program_from_files(side)).reused


# --- through the store -------------------------------------------------------------------------


def _repo(tmp_path: Path) -> tuple[Path, list[str]]:
    repo = init_repo(tmp_path / "repo")
    shas = [commit_tree(repo, files, label) for label, files in _versions()]
    return repo, shas


def _published_calls(kb_env: KbEnv, repo: Path, sha: str) -> set[str]:
    rows = kb_env.kb("export", repo, "--sha", sha, "--kind", "call_edge").jsonl()
    return {row["artifact_id"] for row in rows}


def _cold_from_store(repo: Path, sha: str) -> set[str]:
    """The call-edge ids of a cold extraction of an indexed commit (its facts from the store)."""
    git = GitRepo.open(repo)
    store = open_store(load_settings(), git.key())
    forget_programs()
    program = load_program(git, store.engine, sha, limits=ParseLimits(), workers=1)
    return {a.artifact_id for a in extract.run_extractor(CallsExtractor(), program).artifacts}


def test_kb_watch_carries_edges_and_publishes_the_cold_ids(
    kb_env: KbEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``kb watch --once`` indexing five commits in one process, with no carry file to start from,
    reuses edges from its second commit on (the call-edge materialization's ``reused`` metadata),
    publishes for each commit exactly the call edges a cold extraction of it builds, and leaves
    the carry file for the next run. The ids it reuses were staged by its own previous commit, so
    it never looks them up in the store again."""
    repo, shas = _repo(tmp_path)
    for name, value in kb_env.environ.items():
        monkeypatch.setenv(name, value)
    assert kb_env.kb("index", repo, "--sha", shas[0]).code == 0
    path = carries.carry_file(load_settings().kb_home, GitRepo.open(repo).key())
    path.unlink()
    looked_up = _recorded_lookups(monkeypatch)
    watched = kb_env.kb("watch", repo, "--once")
    assert watched.code == 0, watched.stderr
    assert looked_up == []
    for sha in shas:
        assert _published_calls(kb_env, repo, sha) == _cold_from_store(repo, sha)
    reused = _metadata(repo, "reused")
    assert reused[shas[1]] == 0  # the watch's first commit: no file, nothing kept yet
    assert all(isinstance(n, int) and n > 0 for n in (reused[sha] for sha in shas[2:])), reused
    assert path.is_file()
    # The watch's call graph replays the files a change cannot reach: at its first commit from
    # the resolutions the ``kb index`` run left in its file, then from those it keeps in memory.
    resolved = _metadata(repo, "files_resolved_again")
    assert shas[0] not in resolved  # the first index: nothing to start from
    assert all(0 < resolved[sha] < len(V1) for sha in shas[1:]), resolved  # type: ignore[operator]
    # It leaves them for the next run beside the carry, as of its last commit, not the file the
    # ``kb index`` run left at the first.
    left = ResolutionFile(resolutions_file(path)).load()
    assert left is not None
    assert left.sha == shas[-1]


def _recorded_lookups(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the carried-id lookups ``extract`` makes from now on."""
    sizes: list[int] = []
    real = bulk.stored_keys

    def recorded(conn: sa.Connection, table: str, column: str, keys: Collection[str]) -> set[str]:
        sizes.append(len(keys))
        return real(conn, table, column, keys)

    monkeypatch.setattr(bulk, "stored_keys", recorded)
    return sizes


def test_ids_the_store_lacks_are_drafted_again(
    kb_env: KbEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A carry whose ids are not stored here (made on another store) is dropped: the commit's
    edges are all drafted, stored and staged, nothing is reported reused."""
    repo, shas = _repo(tmp_path)
    for sha in shas:
        assert kb_env.kb("index", repo, "--sha", sha).code == 0
    for name, value in kb_env.environ.items():
        monkeypatch.setenv(name, value)
    git = GitRepo.open(repo)
    store = open_store(load_settings(), git.key())
    elsewhere = EdgeCarry()
    before = program_from_files(list(_versions())[-2][1])
    carried = elsewhere.resolve(before)
    elsewhere.remember(before, ["f" * 64] * len(carried.extraction.drafts))
    monkeypatch.setattr(carries, "_kept", elsewhere)
    forget_programs()
    program = load_program(git, store.engine, shas[-1], limits=ParseLimits(), workers=1)
    result = extract.extract_commit(store.engine, program, CallsExtractor())
    assert result.reused == 0
    assert set(result.artifact_ids) == _published_calls(kb_env, repo, shas[-1])


def test_a_carry_is_known_stored_where_its_commit_was_staged_with_exactly_its_ids(
    kb_env: KbEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The set-by-set comparison that spares a run looking the carried ids up: true for the ids
    the store staged at that commit, false for one id fewer or one more, or another commit."""
    repo, shas = _repo(tmp_path)
    assert kb_env.kb("index", repo, "--sha", shas[0]).code == 0
    for name, value in kb_env.environ.items():
        monkeypatch.setenv(name, value)
    key = GitRepo.open(repo).key()
    carry = carries.open_carry(CallsExtractor(), carries.carry_file(load_settings().kb_home, key))
    assert carry is not None
    assert carry.remembered is not None
    sha, ids = carry.remembered
    assert sha == shas[0]
    assert ids
    store = open_store(load_settings(), key)
    try:
        with store.engine.connect() as conn:
            assert reads.staged_exactly(conn, sha, "calls", ids)
            assert not reads.staged_exactly(conn, sha, "calls", ids[1:])
            assert not reads.staged_exactly(conn, sha, "calls", [*ids, "0" * 64])
            assert not reads.staged_exactly(conn, shas[1], "calls", ids)
            assert not reads.staged_exactly(conn, sha, "imports", ids)
    finally:
        store.close()


def _metadata(repo: Path, key: str) -> dict[str | None, object]:
    """One metadata value of the call-edge materializations that have it, by commit."""
    settings = load_settings()
    instance = open_instance(settings, open_store(settings, GitRepo.open(repo).key()))
    records = instance.fetch_materializations(dg.AssetKey("call_edges"), limit=50).records
    return {
        r.partition_key: r.asset_materialization.metadata[key].value  # type: ignore[union-attr]
        for r in records
        if key in r.asset_materialization.metadata  # type: ignore[union-attr]
    }


def test_kb_index_carries_edges_through_its_file(
    kb_env: KbEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each ``kb index`` is a run of its own: the edges go from one to the next through the carry
    file under ``KB_HOME``, and every commit publishes the cold ids. An unreadable file, or one
    made under another parser or extractor version, is an empty carry (and is replaced)."""
    repo, shas = _repo(tmp_path)
    for name, value in kb_env.environ.items():
        monkeypatch.setenv(name, value)
    path = carries.carry_file(load_settings().kb_home, GitRepo.open(repo).key())
    looked_up = _recorded_lookups(monkeypatch)
    assert kb_env.kb("index", repo, "--sha", shas[0]).code == 0
    assert path.is_file()
    assert kb_env.kb("index", repo, "--sha", shas[1]).code == 0
    path.write_bytes(b"not a carry")
    assert kb_env.kb("index", repo, "--sha", shas[2]).code == 0
    current = carries.open_carry(CallsExtractor(), path)
    assert current is not None
    with monkeypatch.context() as other:
        other.setattr(call_carry, "stamp", lambda: "format 5; parser of another knowbase")
        path.write_bytes(b"".join(current.dump()))
    assert kb_env.kb("index", repo, "--sha", shas[3]).code == 0
    assert kb_env.kb("index", repo, "--sha", shas[4]).code == 0
    assert kb_env.kb("index", repo, "--sha", shas[5]).code == 0  # an edge gone, two added
    for sha in shas:
        assert _published_calls(kb_env, repo, sha) == _cold_from_store(repo, sha)
    reused = _metadata(repo, "reused")
    assert [reused[sha] for sha in (shas[0], shas[2], shas[3])] == [0, 0, 0]
    assert all(isinstance(n, int) and n > 0 for n in (reused[shas[1]], reused[shas[4]], reused[shas[5]])), (
        reused
    )
    # A carry from the file is not looked up id by id: this store staged exactly its ids.
    assert looked_up == []
    # Each run after the first starts its call graph from the last run's resolutions file.
    resolved = _metadata(repo, "files_resolved_again")
    assert shas[0] not in resolved
    assert all(0 < resolved[sha] < len(V1) for sha in shas[1:]), resolved  # type: ignore[operator]
