"""Values derived from a ``Program``, computed once and shared by everything resolving it.

The symbol table, the call graph, the known occurrences, the entry points' upstream extractions
and the copy a reproducibility check resolves are pure functions of an immutable program; every
extractor of a run asks for them again. They are remembered per program *object* (held, so it
cannot be another object at a reused address), for the programs of one commit only: the run's own
program and the copy its reproducibility checks resolve again (``kb_gates.gates``), which a run
asks for in turn. A program of another commit drops them, so a long-running process
(``kb watch``) never keeps a past commit's: they are dropped before the new program's value is
computed, so the two never coexist, and a value that holds reference cycles is closed as it is
dropped (``drop``), so reference counting frees it at once: knowbase's processes run the cyclic
garbage collector's full collections rarely (``collector``), and until one ran every past commit's
call graph stayed in memory (``kb watch`` grew ~60 MiB per commit on Django). Only a past
commit's values are closed: a third program of one commit (tests make many programs of one sha)
only forgets the oldest one's, which whoever still holds them can go on using.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from kb_assets.core.program import Program

T = TypeVar("T")

PROGRAMS_KEPT = 2
"""Programs of one commit remembered at once: the run's and its recomputation copy."""


class PerProgram(Generic[T]):
    """``compute(program)``, remembered for the last ``PROGRAMS_KEPT`` programs of one commit."""

    def __init__(self, compute: Callable[[Program], T], drop: Callable[[T], None] | None = None) -> None:
        self._compute = compute
        self._drop = drop
        """Called on each value of a past commit as it is dropped (to break its reference cycles)."""
        self._entries: list[tuple[Program, T]] = []

    def __call__(self, program: Program) -> T:
        """The value for ``program``, computed on its first request."""
        for known, value in self._entries:
            if known is program:
                return value
        self._drop_except(program.sha)
        value = self._compute(program)
        self._entries = [*self._entries[-(PROGRAMS_KEPT - 1) :], (program, value)]
        return value

    def forget(self) -> None:
        """Drop every remembered value (benchmarks use it to time a cold computation)."""
        self._drop_except(None)

    def _drop_except(self, sha: str | None) -> None:
        """Drop (and close) the values of every commit but ``sha``."""
        dropped = [value for known, value in self._entries if known.sha != sha]
        self._entries = [entry for entry in self._entries if entry[0].sha == sha]
        if self._drop is not None:
            for value in dropped:
                self._drop(value)
