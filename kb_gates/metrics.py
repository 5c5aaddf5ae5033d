"""Pure gate metrics: set comparisons with their evidence, precision and recall.

Gates report *what* differs, not just that something does, so a failing check in the Dagster UI
or a failing test names the offending edges.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T", bound=Hashable)


@dataclass(frozen=True, slots=True)
class SetDiff(Generic[T]):
    """How an actual set differs from an expected one."""

    missing: frozenset[T]
    extra: frozenset[T]
    matched: int

    @property
    def equal(self) -> bool:
        """True when nothing is missing and nothing is extra."""
        return not self.missing and not self.extra

    @property
    def precision(self) -> float:
        """Share of actual items that were expected (1.0 for an empty actual set)."""
        actual = self.matched + len(self.extra)
        return self.matched / actual if actual else 1.0

    @property
    def recall(self) -> float:
        """Share of expected items that were found (1.0 for an empty expected set)."""
        expected = self.matched + len(self.missing)
        return self.matched / expected if expected else 1.0

    def evidence(self, limit: int = 20) -> list[str]:
        """Up to ``limit`` human-readable differences, deterministic order."""
        rows = [f"missing {item}" for item in sorted(self.missing, key=repr)]
        rows += [f"extra {item}" for item in sorted(self.extra, key=repr)]
        return rows[:limit]


def compare(expected: Iterable[T], actual: Iterable[T]) -> SetDiff[T]:
    """Compare two collections as sets."""
    exp, act = frozenset(expected), frozenset(actual)
    return SetDiff(missing=exp - act, extra=act - exp, matched=len(exp & act))
