"""What is derived from a program is computed once per program object, for one commit at a time,
and what a past commit's values hold is freed as soon as they are forgotten."""

from __future__ import annotations

import dataclasses
import gc
import weakref

from kb_assets.core.callgraph.graph import call_graph
from kb_assets.core.modules import map_modules
from kb_assets.core.program import Program
from kb_assets.core.program_memo import PerProgram
from kb_assets.core.symbols.table import symbol_table
from tests.programs import program_from_files


def _program(sha: str) -> Program:
    return Program(sha=sha, files={}, module_map=map_modules([]))


def _counting(computed: list[Program]) -> PerProgram[int]:
    """A memo whose value is how many programs it computed so far, recording each."""

    def compute(program: Program) -> int:
        computed.append(program)
        return len(computed)

    return PerProgram(compute)


def test_a_value_is_computed_once_per_program_and_kept_for_its_copy() -> None:
    """The run's program and its recomputation copy (same commit) each get their own value, both
    kept; asking again computes nothing."""
    computed: list[Program] = []
    memo = _counting(computed)
    run = _program("a" * 40)
    copy = dataclasses.replace(run)
    assert (memo(run), memo(copy), memo(run), memo(copy)) == (1, 2, 1, 2)
    assert computed == [run, copy]
    assert computed[0] is run
    assert computed[1] is copy


def test_a_program_of_another_commit_drops_the_values_of_the_last_one() -> None:
    """A long-running process moving to the next commit keeps nothing of the previous one."""
    computed: list[Program] = []
    memo = _counting(computed)
    first, second = _program("a" * 40), _program("b" * 40)
    memo(first)
    memo(second)
    assert memo(first) == 3  # computed again: the second commit's program evicted it
    third = dataclasses.replace(first)
    memo(third)
    memo(first)
    assert len(computed) == 4  # first and its copy are both kept, second is gone


def test_forgotten_values_are_dropped_before_the_next_commit_is_computed() -> None:
    """``drop`` gets each value of a past commit before the new commit's value is computed (they
    never coexist); a third program of one commit only forgets the oldest one's value, unclosed
    (whoever holds it may still use it)."""
    events: list[str] = []
    computed = iter(range(100))

    def compute(program: Program) -> str:
        value = f"{program.sha[0]}{next(computed)}"
        events.append(f"compute {value}")
        return value

    memo = PerProgram(compute, lambda value: events.append(f"drop {value}"))
    first = _program("a" * 40)
    memo(first)
    memo(dataclasses.replace(first))
    memo(_program("b" * 40))
    assert events == ["compute a0", "compute a1", "drop a0", "drop a1", "compute b2"]
    del events[:]
    for _ in range(3):
        memo(dataclasses.replace(first))
    assert events == ["drop b2", "compute a3", "compute a4", "compute a5"]
    memo.forget()
    assert events[4:] == ["drop a4", "drop a5"]


def test_a_past_commits_call_graph_and_symbol_table_are_freed_without_the_cyclic_collector() -> None:
    """Both could hold reference cycles (an evaluator and its helpers point at each other, a symbol
    table and its namespaces): moving to another commit closes the graph, and the namespaces hold
    their table weakly, so reference counting alone frees them. Before, they waited for a full
    collection, which ``kb watch`` seldom runs: Django's graph and table stayed, ~60 MiB a commit."""
    files = {
        "pkg/__init__.py": "",
        "pkg/a.py": "from pkg.b import g\ndef f():\n    g()\n",
        "pkg/b.py": "def g():\n    pass\n",
    }
    first = program_from_files(files, sha="a" * 40)
    graph = call_graph(first)
    assert graph.edges
    evaluator, table = weakref.ref(graph.evaluator), weakref.ref(symbol_table(first))
    del graph
    enabled = gc.isenabled()
    gc.disable()
    try:
        call_graph(program_from_files(files, sha="b" * 40))
        assert evaluator() is None
        assert table() is None
    finally:
        if enabled:
            gc.enable()
