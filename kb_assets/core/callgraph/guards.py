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

The same bookkeeping carries what each computation read (``reads``): a question starts from an
empty read set and adds it to its caller's when it ends, and a memoized answer keeps its read set
beside it (``deps``), added again on every hit (``recall``).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TypeVar

from kb_assets.core.callgraph.reads import Reads

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

NO_HIT = 1 << 62
"""The low-link of a computation that read no cycle's "unknown"."""

UNSET: object = object()
"""What ``recall`` answers for a question not memoized."""


class Guards:
    """The depth of the questions in progress, the current computation's low-link and read set,
    shared by the evaluator, its members and its hierarchy."""

    __slots__ = ("depth", "low", "reads")

    def __init__(self, reads: Reads) -> None:
        self.depth = 0
        self.low = NO_HIT
        self.reads = reads

    def hit(self, depth: int) -> None:
        """A cycle was answered "unknown" from the question in progress at ``depth``."""
        self.low = min(self.low, depth)

    def recall(self, memo: dict[K, V], deps: dict[K, int], key: K) -> V | object:
        """The memoized answer to ``key`` (``UNSET`` if none), its read set added to the current one."""
        found = memo.get(key, UNSET)
        if found is not UNSET and deps:
            self.reads.bits |= deps.get(key, 0)
        return found

    def ask(
        self,
        memo: dict[K, V],
        deps: dict[K, int],
        active: dict[K, int],
        key: K,
        *,
        compute: Callable[[], V],
        unknown: V,
    ) -> V:
        """A question that can be in progress (``active``: the ones that are, with their depth):
        ``unknown`` while it is, else ``compute()``, memoized (with what it read) unless it read
        an "unknown" from a question in progress outside it."""
        depth = active.get(key)
        if depth is not None:
            self.hit(depth)
            return unknown
        self.depth = depth = self.depth + 1
        saved, self.low = self.low, NO_HIT
        reads = self.reads
        before, reads.bits = reads.bits, 0
        active[key] = depth
        try:
            value = compute()
        finally:
            del active[key]
            self.depth = depth - 1
            read = reads.bits
            reads.bits = before | read
            low = self.low
            kept = low >= depth
            self.low = saved if kept else min(low, saved)
        if kept:
            memo[key] = value
            if read:
                deps[key] = reads.kept(read)
        return value

    def memoized(self, memo: dict[K, V], deps: dict[K, int], key: K, compute: Callable[[], V]) -> V:
        """``compute()``, memoized (with what it read) unless it read an "unknown" from a question
        in progress (a computation that is not itself such a question: a lookup, an import, a
        module-level name)."""
        saved, self.low = self.low, NO_HIT
        reads = self.reads
        before, reads.bits = reads.bits, 0
        try:
            value = compute()
        finally:
            read = reads.bits
            reads.bits = before | read
            low = self.low
            kept = low > self.depth
            self.low = saved if kept else min(low, saved)
        if kept:
            memo[key] = value
            if read:
                deps[key] = reads.kept(read)
        return value
