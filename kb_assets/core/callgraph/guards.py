"""Memoized evaluation whose answers do not depend on what was being evaluated first.

Three questions of the call graph's evaluation recurse through each other, and each stops a cycle
by answering "unknown" when it is asked again while still in progress: an expression in a scope
(``Evaluator.expr``), a function's result (``Members._returned``) and a class's method order
(``Hierarchy.mro``). Such an answer is about the question in progress, so whatever is computed
from it holds only inside that question. Memoized as it was, every later question got the answer
computed first, and the graph — down to the spans an edge was read from — depended on which site
had been resolved first: the later scopes of knowbase's own call-graph package, resolved by a
fresh evaluator (``parts``), got other ``via`` spans than in one pass.

So each question in progress is numbered by its depth, a cycle's "unknown" records the depth of
the question it came from (``hit``), and the lowest such depth flows out of every computation, as
the low-link does in Tarjan's algorithm. An answer is memoized only if nothing it read came from a
question still in progress outside it; otherwise it is computed again when asked again (which
happens only inside the cycle that made it so). A memoized answer is then a function of its
question alone, and so is the whole graph.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

NO_HIT = 1 << 62
"""The low-link of a computation that read no cycle's "unknown"."""


class Guards:
    """The depth of the questions in progress and the current computation's low-link, shared by
    the evaluator, its members and its hierarchy."""

    __slots__ = ("depth", "low")

    def __init__(self) -> None:
        self.depth = 0
        self.low = NO_HIT

    def hit(self, depth: int) -> None:
        """A cycle was answered "unknown" from the question in progress at ``depth``."""
        self.low = min(self.low, depth)

    def enter(self) -> tuple[int, int]:
        """Start a question that can be in progress: its depth, and the low-link to restore."""
        self.depth = depth = self.depth + 1
        saved, self.low = self.low, NO_HIT
        return depth, saved

    def leave(self, depth: int, saved: int) -> bool:
        """End the question ``enter`` started; whether its answer may be memoized (it read no
        "unknown" from a question that was already in progress when it started)."""
        self.depth = depth - 1
        low = self.low
        if low < depth:
            self.low = min(low, saved)
            return False
        self.low = saved
        return True

    def start(self) -> int:
        """Start a memoized computation that is not itself guarded: the low-link to restore."""
        saved, self.low = self.low, NO_HIT
        return saved

    def settled(self, saved: int) -> bool:
        """End what ``start`` started; whether its answer may be memoized."""
        low = self.low
        if low <= self.depth:
            self.low = min(low, saved)
            return False
        self.low = saved
        return True

    def ask(self, memo: dict[K, V], active: dict[K, int], key: K, compute: Callable[[], V], unknown: V) -> V:
        """A question that can be in progress (``active``: the ones that are, with their depth):
        ``unknown`` while it is, else ``compute()``, memoized if ``leave`` allows."""
        depth = active.get(key)
        if depth is not None:
            self.hit(depth)
            return unknown
        depth, saved = self.enter()
        active[key] = depth
        try:
            value = compute()
        finally:
            del active[key]
            kept = self.leave(depth, saved)
        if kept:
            memo[key] = value
        return value

    def memoized(self, memo: dict[K, V], key: K, compute: Callable[[], V]) -> V:
        """``compute()``, kept in ``memo`` if ``settled`` allows (a computation that is not itself
        a question in progress: a lookup, an import, a module-level name)."""
        saved = self.start()
        value = compute()
        if self.settled(saved):
            memo[key] = value
        return value
