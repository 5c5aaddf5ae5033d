"""The call graph resolved in two parts, each in a forked copy, is the one-pass graph; and a copy
that fails or dies costs time, never the answer.

The builds run in a freshly spawned process: a fork is only made from a process with one thread,
or beside Dagster's threads once allowed (``kb_assets.core.forked``), and the test process may
hold threads of earlier tests. Each build there reports whether a copy actually resolved part of
it, so a comparison cannot pass by never forking.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

from dagster._utils import start_termination_thread

from kb_assets.core import forked
from kb_assets.core.callgraph import graph as graph_module
from kb_assets.core.callgraph import parts
from kb_assets.core.callgraph.graph import CallGraph, Edge
from kb_assets.core.callgraph.index import Scopes
from kb_assets.core.callgraph.resolutions import FileLog, Resolutions
from kb_assets.core.collector import paused_gc
from kb_assets.core.extractors.calls import EdgeDrafts
from kb_assets.core.grounding import build_artifacts
from kb_assets.core.program import Program
from tests.gitfixtures import commit_tree, init_repo, read_folder
from tests.kbfixtures import KbEnv
from tests.programs import program_from_files
from tests.spawned import run_spawned
from tests.test_call_graph_order import CYCLES

ROOT = Path(__file__).resolve().parent.parent


def _programs() -> dict[str, Program]:
    """Code with cycles and passed functions, the call-graph oracle's fixture, and knowbase's own
    call-graph package (real code: classes, closures, decorators, a function defined twice)."""
    oracle, _ = read_folder(ROOT / "fixtures" / "calls_oracle" / "01-initial")
    return {
        "cycles": program_from_files(CYCLES),
        "oracle": program_from_files(oracle),
        "own": program_from_files(own_code()),
    }


def own_code() -> dict[str, str]:
    """knowbase's own call-graph and symbols packages, as files: real code with classes, closures,
    decorators, memos passed as arguments and a function defined twice."""
    own = {
        str(path.relative_to(ROOT)): path.read_text()
        for folder in ("kb_assets/core/callgraph", "kb_assets/core/symbols")
        for path in sorted((ROOT / folder).glob("*.py"))
    }
    own["kb_assets/__init__.py"] = own["kb_assets/core/__init__.py"] = ""
    own["kb_assets/core/callgraph/__init__.py"] = own["kb_assets/core/symbols/__init__.py"] = ""
    return own


def edge_fields(edge: Edge) -> tuple[object, ...]:
    """Every field of an edge that anything reads."""
    fields = (edge.caller, edge.callee, edge.callee_spans, edge.forms, edge.offsets, edge.others, edge.main)
    return (*fields, sorted(edge.via))


def _shape(graph: CallGraph) -> Any:
    """Every field of the graph that anything reads, in order."""
    edges = [(key, *edge_fields(edge)) for key, edge in graph.edges.items()]
    return (
        edges,
        list(graph.externals.items()),
        list(graph.nodes.items()),
        sorted(graph.stats.items()),
        graph.gaps,
    )


def _ids(program: Program, graph: CallGraph) -> list[str]:
    drafts = EdgeDrafts(program, graph, list(graph.edges))
    artifacts = build_artifacts(drafts, extractor_id="calls", extractor_version="test", program=program)
    return sorted(a.artifact_id for a in artifacts)


def _failing(which: str) -> None:
    """Make the copies resolving the head part (``first``), the tail part (``second``) or both
    fail; the tail part is the one holding the program's last scope."""
    real = graph_module.resolve_part

    def part(program: Program, refs: Any, tracking: bool) -> dict[str, FileLog]:
        tail = bool(refs) and refs[-1] == list(Scopes(program).refs())[-1]
        if which == "both" or (which == "second") == tail:
            raise RuntimeError("the copy fails")
        return real(program, refs, tracking)

    graph_module.resolve_part = part


def _compare_builds(fail: str | None) -> list[tuple[str, int, int, bool, bool, bool]]:
    """In a spawned process, the copies failing as ``_failing(fail)`` says: for each program and
    several cuts, (program, cut, scopes, whether a copy helped, graph equal to one pass, artifact
    ids equal)."""
    if fail is not None:
        _failing(fail)
    out = []
    for name, program in _programs().items():
        n = len(list(Scopes(program).refs()))
        with paused_gc():
            whole, _ = graph_module._build(program, cut=n)
        for cut in sorted({0, 1, n // 3, n // 2, n - 1}):
            with paused_gc():
                split, _ = graph_module._build(program, cut=cut)
            same = _shape(split) == _shape(whole)
            out.append((name, cut, n, split.helped, same, _ids(program, split) == _ids(program, whole)))
    return out


def test_parts_give_the_one_pass_graph() -> None:
    results = run_spawned(_compare_builds, None)
    assert {name for name, *_ in results} == {"cycles", "oracle", "own"}
    for name, cut, n, helped, same, same_ids in results:
        assert helped == (cut < n), (name, cut)
        assert same, (name, cut, n)
        assert same_ids, (name, cut, n)
    own = [n for name, _, n, *_ in results if name == "own"]
    assert own[0] > 100  # real code, not a toy


def _logs(resolutions: Resolutions | None) -> Any:
    assert resolutions is not None
    return sorted(
        (path, log.ops, sorted(log.stats.items()), log.reads) for path, log in resolutions.logs.items()
    )


def _compare_kept() -> list[tuple[str, int, bool, bool]]:
    """In a spawned process: for each program and a cut in the middle, (program, cut, whether a
    copy helped, resolutions kept equal to one pass's: every file's log, counts and read set)."""
    out = []
    for name, program in _programs().items():
        n = len(list(Scopes(program).refs()))
        with paused_gc():
            _, whole = graph_module._build(program, cut=n, keep=True)
            split_graph, split = graph_module._build(program, cut=n // 2, keep=True)
        out.append((name, n // 2, split_graph.helped, _logs(split) == _logs(whole)))
    return out


def test_parts_keep_the_one_pass_resolutions() -> None:
    """What a build keeps for the next commit (``resolutions``) is the same whether a copy
    resolved part of it: the copy's logs and read sets come back whole."""
    for name, cut, helped, same in run_spawned(_compare_kept):
        assert helped, (name, cut)
        assert same, (name, cut)


def test_a_failing_copy_is_redone_here() -> None:
    """Both copies failing, or either one: the parts they failed are resolved here, before or
    after replaying the other's, and the graph is still the one-pass graph."""
    for name, cut, n, helped, same, same_ids in run_spawned(_compare_builds, "both"):
        assert not helped, (name, cut)
        assert same, (name, cut, n)
        assert same_ids, (name, cut, n)
    for which in ("first", "second"):
        for name, cut, n, helped, same, same_ids in run_spawned(_compare_builds, which):
            assert helped == (cut < n), (which, name, cut)
            assert same, (which, name, cut, n)
            assert same_ids, (which, name, cut, n)


def test_small_programs_are_not_split() -> None:
    program = _programs()["cycles"]
    scopes = Scopes(program)
    refs = list(scopes.refs())
    assert parts.split(scopes, refs) == len(refs)


def test_the_split_follows_the_sites(monkeypatch: Any) -> None:
    program = _programs()["own"]
    scopes = Scopes(program)
    refs = list(scopes.refs())
    monkeypatch.setattr(parts, "SHARE_MIN_SITES", 1)
    cut = parts.split(scopes, refs)
    sites = [len(scopes.record(ref).get("calls", ())) for ref in refs]
    assert 0 < cut < len(refs)
    assert sum(sites[: cut - 1]) < parts.FIRST_SHARE * sum(sites) <= sum(sites[:cut])


def _forked(work: Any) -> Any:
    """``work``'s value through a forked copy (one must be made)."""
    helper = forked.fork(work)
    assert helper is not None
    with helper:
        return helper.result()


def _forks() -> dict[str, Any]:
    """In a spawned process: what ``forked.fork`` does with a value, an error, a death, a copy
    still running when its context ends, one thread too many, ``KB_WORKERS=1``, and beside the
    threads of a run Dagster launched: refused until allowed, and never from another thread."""
    found: dict[str, Any] = {"value": _forked(lambda: {"answer": [42]})}

    def fail() -> None:
        raise ValueError("no")

    def die() -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    found["error"], found["death"] = _forked(fail), _forked(die)
    start = time.monotonic()
    sleeper = forked.fork(lambda: time.sleep(60))
    assert sleeper is not None
    with sleeper:
        pid = sleeper._pid
    found["stopped_in"] = time.monotonic() - start
    try:
        os.waitpid(pid or 0, os.WNOHANG)
        found["reaped"] = False
    except ChildProcessError:
        found["reaped"] = True

    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    found["with_thread"] = forked.fork(lambda: 1)
    stop.set()
    thread.join()
    forked.set_workers(1)
    found["one_worker"] = forked.fork(lambda: 1)
    forked.set_workers(0)
    found["again"] = _forked(lambda: 2)
    found["beside_dagster_before"], _ = _beside_dagster_s_threads(lambda: forked.fork(lambda: 1))
    forked.allow_dagster_threads()
    found["beside_dagster"], found["dagster_threads"] = _beside_dagster_s_threads(lambda: _forked(lambda: 3))
    asked: list[object] = []
    thread = threading.Thread(target=lambda: asked.append(forked.fork(lambda: 1)))
    thread.start()
    thread.join()
    found["from_thread"] = asked[0]
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, name="not-dagster")
    thread.start()
    found["with_other_thread"] = forked.fork(lambda: 1)  # allowed: Dagster's threads, no other
    stop.set()
    thread.join()
    return found


def _beside_dagster_s_threads(ask: Any) -> tuple[Any, list[str]]:
    """What ``ask`` returns beside the threads Dagster starts in the process of a run its
    webserver or daemon launched (by Dagster's own code), and their names."""
    should_stop, done = multiprocessing.Event(), multiprocessing.Event()
    start_termination_thread(should_stop, done)  # type: ignore[arg-type]  # checked to be this type
    events: multiprocessing.Queue[str] = multiprocessing.Queue()
    events.put("event")  # starts the queue's feeder thread, as the run's first event does
    try:
        names = sorted(t.name for t in threading.enumerate() if t is not threading.main_thread())
        return ask(), names
    finally:
        done.set()  # the handler then returns without interrupting this thread
        should_stop.set()
        for thread in threading.enumerate():  # gone before a next call counts the threads
            if thread.name == "termination-handler":
                thread.join(timeout=30)
        events.get()
        events.close()
        events.join_thread()


def test_fork_returns_the_copy_s_value_or_none() -> None:
    found = run_spawned(_forks)
    assert found["value"] == {"answer": [42]}
    assert found["error"] is None
    assert found["death"] is None
    assert found["stopped_in"] < 10
    assert found["reaped"]
    assert found["with_thread"] is None
    assert found["one_worker"] is None
    assert found["again"] == 2
    assert found["dagster_threads"] == ["QueueFeederThread", "termination-handler"]
    assert found["beside_dagster_before"] is None
    assert found["beside_dagster"] == 3
    assert found["from_thread"] is None
    assert found["with_other_thread"] is None


def test_a_run_follows_kb_workers(kb_env: KbEnv, tmp_path: Path) -> None:
    """The Dagster resource applies ``KB_WORKERS`` to the process: with 1, no copy is forked."""
    repo = init_repo(tmp_path / "repo")
    commit_tree(repo, {"a.py": "def f():\n    return 1\n"}, "first")
    kb_env.extra["KB_WORKERS"] = "1"
    try:
        assert kb_env.kb("index", repo).code == 0
        assert forked.fork(lambda: 1) is None
        assert forked._workers == 1
    finally:
        forked.set_workers(0)
