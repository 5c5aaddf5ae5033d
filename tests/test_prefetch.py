"""Work done ahead by a forked copy (``prefetch``) is the work the steps would have done: a ``kb
index`` run stages and publishes, for the extractors done ahead, exactly what each extractor
resolves on its own, and says so in their materializations (the call-edge step, which starts the
copies on an incremental run, runs before their steps); a result goes only to the program,
store and extractor it was made for, once; a copy that fails leaves the work to the step; a copy
still running when the run ends is stopped.

Whatever forks runs in a freshly spawned process (``tests.spawned``): a copy is only made from a
process with one thread. Each test checks that a copy was made, so none can pass by never forking.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from functools import partial
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import sqlalchemy as sa

from kb_assets.cli.instance import open_instance
from kb_assets.cli.main import main
from kb_assets.core.extractors.base import Extractor
from kb_assets.core.extractors.registry import extractor as registered
from kb_assets.core.program import Program
from kb_assets.core.spans import ParseLimits
from kb_assets.indexing import prefetch
from kb_assets.indexing.extract import run_extractor
from kb_assets.indexing.load import forget_programs, load_program
from kb_assets.indexing.prefetch import AFTER_GRAPH, AFTER_WRITES, AHEAD
from kb_resources.git.repo import GitRepo
from kb_resources.settings import load_settings
from kb_resources.store import reads
from kb_resources.store.engine import open_store
from kb_resources.store.schema import artifact, snapshot_entry
from tests.gitfixtures import build_repo, commit_folders, commit_tree, read_folder
from tests.kbfixtures import KbEnv
from tests.programs import program_from_files
from tests.spawned import run_spawned

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _index(environ: dict[str, str], repo: str, shas: list[str]) -> list[int]:
    """In a spawned process: ``kb index`` of each commit, in order; the exit codes."""
    os.environ.update(environ)
    codes = []
    for sha in shas:
        try:
            codes.append(main(["index", repo, "--sha", sha, "--no-verify"]))
        except SystemExit as exit_:
            codes.append(int(exit_.code or 0))
    return codes


def _done_ahead(instance: dg.DagsterInstance, asset: str) -> dict[str | None, object]:
    """``done_ahead`` of the asset's materializations, by commit (absent: False)."""
    records = instance.fetch_materializations(dg.AssetKey(asset), limit=50).records
    found: dict[str | None, object] = {}
    for record in records:
        meta = record.asset_materialization.metadata  # type: ignore[union-attr]
        found[record.partition_key] = meta["done_ahead"].value if "done_ahead" in meta else False
    return found


@pytest.mark.parametrize(
    ("fixture", "nonempty"),
    [
        ("entities_oracle", ("entities", "imports", "public_api")),
        ("paths_oracle", ("api_routes", "process_paths")),
        ("events_oracle", ("event_handlers",)),
    ],
)
def test_a_run_publishes_what_each_extractor_resolves_on_its_own(
    kb_env: KbEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fixture: str, nonempty: tuple[str, ...]
) -> None:
    """Every commit of a fixture and one more on top (a module added); ``nonempty``: the extractors
    that find something there. Every commit's extractors after the call edges are done ahead: the
    first commit's, on a fresh store (a full build), once its call edges are stored
    (``prefetch.AFTER_WRITES``); every later one's while the call edges are resolved."""
    repo = tmp_path / "repo"
    shas = build_repo(FIXTURES / fixture, repo)
    files, links = read_folder(commit_folders(FIXTURES / fixture)[-1])
    probe = {**files, "kb_probe.py": b"import os\n\n\ndef probe():\n    return os.sep\n"}
    shas.append(commit_tree(repo, probe, "a module added", symlinks=links))
    assert run_spawned(_index, kb_env.environ, str(repo), shas) == [0] * len(shas)
    for name, value in kb_env.environ.items():
        monkeypatch.setenv(name, value)
    git = GitRepo.open(repo)
    store = open_store(load_settings(), git.key())
    instance = open_instance(load_settings(), store)
    assert set(AFTER_WRITES) == set(AHEAD + AFTER_GRAPH)
    try:
        for asset in (registered(i).asset_name for i in AHEAD + AFTER_GRAPH):
            assert _done_ahead(instance, asset) == dict.fromkeys(shas, True), asset
        assert _done_ahead(instance, "call_edges") == dict.fromkeys(shas, False)
        forget_programs()
        for sha in shas:
            program = load_program(git, store.engine, sha, limits=ParseLimits(), workers=1)
            with store.engine.connect() as conn:
                gaps = Counter((g.source, g.path, g.reason, g.line) for g in reads.gaps(conn, sha))
                for extractor_id in AHEAD + AFTER_GRAPH:
                    own = run_extractor(registered(extractor_id), program)
                    published = _published(conn, sha, extractor_id)
                    assert published == {a.artifact_id for a in own.artifacts}
                    recorded = Counter({k: n for k, n in gaps.items() if k[0] == extractor_id})
                    assert recorded == Counter((extractor_id, g.path, g.reason, g.line) for g in own.gaps)
            assert all(_published_count(store.engine, sha, i) for i in nonempty)
    finally:
        instance.dispose()
        store.close()


def _watch_once(environ: dict[str, str], repo: str) -> int:
    """In a spawned process: ``kb watch --once``; its exit code."""
    os.environ.update(environ)
    try:
        return main(["watch", repo, "--once"])
    except SystemExit as exit_:
        return int(exit_.code or 0)


def _started_ahead(instance: dg.DagsterInstance) -> dict[str | None, bool]:
    """``started_ahead`` of the ``code_spans`` materializations, by commit (absent: False)."""
    records = instance.fetch_materializations(dg.AssetKey("code_spans"), limit=50).records
    return {
        r.partition_key: "started_ahead" in r.asset_materialization.metadata  # type: ignore[union-attr]
        for r in records
    }


def test_a_watch_starts_the_work_ahead_once_the_commit_is_parsed(
    kb_env: KbEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a watch whose kept carry remembers a commit (every commit after its first), the copy
    doing the routes', entities', import edges' and public API's work starts at the end of the
    parse (``extract.start_ahead``: ``code_spans`` says ``started_ahead``), not at the call-edge
    step, which starts no second one; those steps take its results (``done_ahead``), and every
    commit publishes what each extractor resolves on its own."""
    repo = tmp_path / "repo"
    shas = build_repo(FIXTURES / "history", repo)
    assert run_spawned(_index, kb_env.environ, str(repo), shas[:1]) == [0]
    assert run_spawned(_watch_once, kb_env.environ, str(repo)) == 0
    for name, value in kb_env.environ.items():
        monkeypatch.setenv(name, value)
    git = GitRepo.open(repo)
    store = open_store(load_settings(), git.key())
    instance = open_instance(load_settings(), store)
    try:
        watched = shas[1:]
        assert _started_ahead(instance) == {shas[0]: False, watched[0]: False} | dict.fromkeys(
            watched[1:], True
        )
        for asset in (registered(i).asset_name for i in AHEAD):
            assert all(_done_ahead(instance, asset)[sha] for sha in watched), asset
        forget_programs()
        for sha in watched:
            program = load_program(git, store.engine, sha, limits=ParseLimits(), workers=1)
            with store.engine.connect() as conn:
                for extractor_id in AHEAD + AFTER_GRAPH:
                    own = run_extractor(registered(extractor_id), program)
                    assert _published(conn, sha, extractor_id) == {a.artifact_id for a in own.artifacts}
    finally:
        instance.dispose()
        store.close()


def _published(conn: sa.Connection, sha: str, extractor_id: str) -> set[str]:
    """The ids of one extractor's artifacts in the published snapshot of ``sha``."""
    e, a = snapshot_entry.c, artifact.c
    query = (
        sa.select(e.artifact_id)
        .join(artifact, a.artifact_id == e.artifact_id)
        .where(e.sha == sha, a.extractor_id == extractor_id)
    )
    return set(conn.scalars(query))


def _published_count(engine: sa.Engine, sha: str, extractor_id: str) -> int:
    with engine.connect() as conn:
        return len(_published(conn, sha, extractor_id))


URL = sa.make_url("postgresql+psycopg://nobody@/unused")
"""The copies below never connect: their work ignores the engine it is given."""


def _ids(extractor_id: str) -> prefetch.Done:
    return prefetch.Done(ids=(extractor_id * 8,), gaps=(), loaded=Counter({"artifact": 1}))


def _named(engine: sa.Engine, program: Program, ex: Extractor) -> prefetch.Done:
    return _ids(ex.extractor_id)


def _failing(engine: sa.Engine, program: Program, ex: Extractor) -> prefetch.Done:
    raise RuntimeError("the copy fails")


def _stuck(engine: sa.Engine, program: Program, ex: Extractor) -> prefetch.Done:
    time.sleep(600)
    return _ids(ex.extractor_id)


def _imports_first(marker: str, engine: sa.Engine, program: Program, ex: Extractor) -> prefetch.Done:
    """The imports at once; the entities once ``marker`` exists (made by whoever took the imports:
    after 60 s without it, ids marked "late"); any other extractor fails."""
    if ex.extractor_id == "imports":
        return _ids("imports")
    if ex.extractor_id != "entities":
        raise RuntimeError("the copy fails after its first result")
    deadline = time.monotonic() + 60
    while not os.path.exists(marker) and time.monotonic() < deadline:
        time.sleep(0.01)
    return _ids("entities" if os.path.exists(marker) else "late")


def _streaming(marker: str) -> dict[str, Any]:
    """In a spawned process: results taken from a copy still at work, and from one that failed
    after its first."""
    program = program_from_files({"a.py": "import os\n"})
    imports, entities, routes = registered("imports"), registered("entities"), registered("api_routes")
    work = partial(_imports_first, marker)
    out: dict[str, Any] = {}
    with prefetch.prefetching():
        prefetch.start(URL, program, ["imports", "entities"], work)
        pid = prefetch._started[-1].copy._pid
        assert pid is not None
        out["imports"] = prefetch.take(URL, program, imports)
        out["still at work"] = os.waitpid(pid, os.WNOHANG) == (0, 0)
        Path(marker).touch()
        out["entities"] = prefetch.take(URL, program, entities)
        prefetch.start(URL, program, ["imports", "api_routes"], work)
        out["before the failure"] = prefetch.take(URL, program, imports)
        out["after the failure"] = prefetch.take(URL, program, routes)
    return out


def test_a_result_is_taken_while_the_copy_works_on_the_next(tmp_path: Path) -> None:
    """A step takes its result as soon as the copy has it, not when the copy has done everything
    (the copy here finds the entities only after the imports were taken); what a copy handed back
    before it failed is still taken, and what it did not is left to the step."""
    found = run_spawned(_streaming, str(tmp_path / "imports taken"))
    assert found["imports"] == _ids("imports")
    assert found["still at work"] is True
    assert found["entities"] == _ids("entities")
    assert found["before the failure"] == _ids("imports")
    assert found["after the failure"] is None


def _exercise() -> dict[str, Any]:
    """In a spawned process: what ``start`` and ``take`` answer in each case."""
    program = program_from_files({"a.py": "import os\n"})
    other = program_from_files({"a.py": "import os\n"})
    imports, entities = registered("imports"), registered("entities")
    out: dict[str, Any] = {"outside": prefetch.start(URL, program, ["imports"], _named)}
    with prefetch.prefetching():
        out["started"] = prefetch.start(URL, program, ["imports", "entities"], _named)
        out["started again"] = prefetch.start(URL, program, ["imports", "entities"], _named)
        out["copies"] = len(prefetch._started)
        out["other program"] = prefetch.take(URL, program=other, extractor=imports)
        out["other store"] = prefetch.take(sa.make_url("postgresql+psycopg://x@/y"), program, imports)
        out["other object"] = prefetch.take(URL, program, type(imports)())
        out["not started for"] = prefetch.take(URL, program, registered("calls"))
        out["imports"] = prefetch.take(URL, program, imports)
        out["imports again"] = prefetch.take(URL, program, imports)
        out["entities"] = prefetch.take(URL, program, entities)
        out["failing started"] = prefetch.start(URL, program, ["imports"], _failing)
        out["failing"] = prefetch.take(URL, program, imports)
        out["stuck started"] = prefetch.start(URL, program, ["imports"], _stuck)
        out["stuck pid"] = prefetch._started[-1].copy._pid
    out["left"] = prefetch._started
    return out


def test_a_result_goes_once_to_what_it_was_made_for() -> None:
    found = run_spawned(_exercise)
    assert found["outside"] is False
    assert found["started"] is True
    assert (found["started again"], found["copies"]) == (True, 1)  # the same work is not forked twice
    for case in ("other program", "other store", "other object", "not started for", "imports again"):
        assert found[case] is None, case
    assert found["imports"] == _ids("imports")
    assert found["entities"] == _ids("entities")
    assert found["failing started"] is True
    assert found["failing"] is None
    assert found["stuck started"] is True
    assert found["left"] == []
    with pytest.raises(ProcessLookupError):  # stopped and reaped when the run ended
        os.kill(found["stuck pid"], 0)
