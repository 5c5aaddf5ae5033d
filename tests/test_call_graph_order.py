"""The call graph does not depend on the order its scopes are resolved in, and a scope's edges
depend on other scopes only through passed functions.

These are the two properties an incremental call graph (re-resolving only the scopes a commit can
affect) would rely on. The evaluator's memos double as cycle guards, so in principle an answer
could depend on what was being evaluated first; these tests pin down that, on code with cycles,
it does not.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kb_assets.core.callgraph.graph import CallGraph, build
from kb_assets.core.callgraph.index import ScopeRef, Scopes
from kb_assets.core.callgraph.values import form_names
from kb_assets.core.extractors import calls
from kb_assets.core.extractors.calls import CallsExtractor
from kb_assets.core.grounding import build_artifacts
from kb_assets.core.program import Program
from tests.gitfixtures import read_folder
from tests.programs import program_from_files

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

CYCLES = {
    "pkg/__init__.py": "",
    "pkg/loops.py": (
        "from pkg import other\n"
        "a = b\n"
        "b = a\n"
        "def ping():\n    return pong()\n"
        "def pong():\n    return ping()\n"
        "def use():\n    ping()()\n    a()\n    other.relay(ping)\n"
        "class A(other.B):\n    def run(self):\n        self.go()\n        return self.run()\n"
    ),
    "pkg/other.py": (
        "from pkg.loops import A, use\n"
        "def relay(f):\n    f()\n    return relay\n"
        "class B:\n    def go(self):\n        A().run()\n        use()\n"
        "def loop():\n    relay(loop)()\n"
    ),
}


def _programs() -> list[Program]:
    fixture, _ = read_folder(FIXTURES / "calls_oracle" / "01-initial")
    return [program_from_files(CYCLES), program_from_files(fixture)]


def _ids(program: Program, monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """The call-edge artifact ids of a fresh build (the extractor's own graph is memoized per
    program, so it is handed this one instead)."""
    graph = build(program)
    with monkeypatch.context() as patched:
        patched.setattr(calls, "call_graph", lambda _: graph)
        drafts = CallsExtractor().resolve(program).drafts
    built = build_artifacts(drafts, extractor_id="calls", extractor_version="1", program=program)
    return {a.artifact_id for a in built}


def _ordered(monkeypatch: pytest.MonkeyPatch, order: str) -> None:
    """Resolve the scopes in another order: ``reversed`` or ``shuffled`` (seeded)."""
    refs = Scopes.refs

    def reordered(self: Scopes) -> Iterator[ScopeRef]:
        found = list(refs(self))
        if order == "reversed":
            found.reverse()
        else:
            random.Random(7).shuffle(found)
        return iter(found)

    monkeypatch.setattr(Scopes, "refs", reordered)


@pytest.mark.parametrize("order", ["reversed", "shuffled"])
def test_the_call_edges_are_the_same_in_any_scope_order(monkeypatch: pytest.MonkeyPatch, order: str) -> None:
    """Resolving the scopes backwards or shuffled yields the same artifact ids, cycles included
    (two names bound to each other, functions returning each other, a method returning its own
    call, a class whose base's method instantiates it)."""
    for program in _programs():
        expected = _ids(program, monkeypatch)
        assert expected
        with monkeypatch.context() as patched:
            _ordered(patched, order)
            assert _ids(program, monkeypatch) == expected


Sites = dict[tuple[str, str], tuple[int, frozenset[tuple[str, int, int]]]]
"""Edges by (caller, callee): their forms mask and call sites (path, span, line offset)."""


def _sites(graph: CallGraph, paths: set[str]) -> Sites:
    """Each edge's forms and its call sites in ``paths`` (edges with none there left out)."""
    found: Sites = {}
    for key, edge in graph.edges.items():
        sites = frozenset(site for site in edge.sites if site[0] in paths)
        if sites:
            found[key] = (edge.forms, sites)
    return found


def _alone(path: str) -> Callable[[Scopes], Iterator[ScopeRef]]:
    """``Scopes.refs`` limited to the scopes of one file."""
    refs = Scopes.refs

    def only(self: Scopes) -> Iterator[ScopeRef]:
        return (ref for ref in refs(self) if ref.path == path)

    return only


def test_a_scope_needs_only_itself_except_for_functions_passed_to_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Resolving only one file's scopes gives exactly the whole build's edges with sites in that
    file, except edges made by ``passed_function`` (with whatever form reached the argument) whose
    function was passed from a scope not resolved."""
    for program in _programs():
        whole = build(program)
        for path in sorted(program.files):
            with monkeypatch.context() as patched:
                patched.setattr(Scopes, "refs", _alone(path))
                alone = _sites(build(program), {path})
            expected = _sites(whole, {path})
            missing = expected.keys() - alone.keys()
            assert all("passed_function" in form_names(expected[key][0]) for key in missing), path
            assert {k: v for k, v in expected.items() if k not in missing} == alone, path
