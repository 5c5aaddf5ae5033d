"""What is derived from a program is computed once per program object, for one commit at a time."""

from __future__ import annotations

import dataclasses

from kb_assets.core.modules import map_modules
from kb_assets.core.program import Program
from kb_assets.core.program_memo import PerProgram


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
