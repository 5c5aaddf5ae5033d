"""Ordering candidate units, and fitting the best of them into a token budget.

Rank is (tier, test code, kind, confidence, key): the tier says how directly a unit is about the
target (see ``Tier``); among equals, units of library code come before units of test code, kinds
that summarize more before the import edges around them, then higher confidence, then logical key
for a stable order. Trimming is greedy in rank order: a unit that does not fit the remaining
budget is skipped (a smaller one further down may still fit) and counted in ``omitted``; rendering
stops once the remainder cannot hold even a small unit or several units in a row did not fit, so a
target with thousands of candidates renders a few dozen of them, and counts the rest per kind.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from enum import IntEnum

from kb_mcp.budget import compact_json, estimate_tokens
from kb_mcp.models import KnowledgeAnswer, Omitted, ProvenanceAnswer, SearchAnswer, Unit
from kb_mcp.snapshots import Entry, SnapshotIndex

BATCH = 12
SMALLEST_UNIT_TOKENS = 80
MAX_MISFITS = 8
MAX_CACHED_COSTS = 200_000
_costs: dict[tuple[str, str, str | None], int] = {}


class Tier(IntEnum):
    """How directly a unit answers a target (lower is better)."""

    KEY = 0  # its logical key is the target
    OWN = 1  # it belongs to the target: its primary subject is the target or inside it, or it is
    #          grounded on the target's own span (the symbol's definition, a file's module span)
    SUBJECT = 2  # it names the target (e.g. the target is what it imports or calls)
    IN_SPAN = 3  # grounded on a span inside the target
    UNDER = 4  # it names something inside the target


def rank(index: SnapshotIndex, tiers: Mapping[str, int]) -> list[Entry]:
    """The matched entries, best first."""
    entries = [index.by_id[aid] for aid in tiers if aid in index.by_id]
    entries.sort(key=lambda e: (tiers[e.artifact_id], e.order))
    return entries


def omitted_of(entries: Sequence[Entry], hint: str | None) -> Omitted:
    """Counts per kind of entries left out of an answer."""
    by_kind = Counter(e.kind for e in entries)
    return Omitted(total=len(entries), by_kind=dict(sorted(by_kind.items())), hint=hint if entries else None)


def unit_cost(unit: Unit) -> int:
    """Estimated tokens of a unit in an answer (its JSON and a separator), cached per commit and
    freshness: a unit read at a commit always renders the same."""
    key = (unit.sha + unit.artifact_id, unit.freshness.status, unit.freshness.last_true_at)
    cost = _costs.get(key)
    if cost is None:
        if len(_costs) >= MAX_CACHED_COSTS:
            _costs.clear()
        cost = _costs[key] = estimate_tokens(compact_json(unit.model_dump(mode="json"))) + 1
    return cost


def fit(
    ranked: Sequence[Entry], load: Callable[[Sequence[Entry]], list[Unit]], budget: int
) -> tuple[list[Unit], list[Entry], int]:
    """The units that fit ``budget`` tokens, in rank order, the entries left out, and the tokens used."""
    kept: list[Unit] = []
    left_out: list[Entry] = []
    remaining = budget
    misfits = 0
    i = 0
    while i < len(ranked) and remaining >= SMALLEST_UNIT_TOKENS and misfits < MAX_MISFITS:
        batch = ranked[i : i + BATCH]
        i += len(batch)
        loaded = {u.artifact_id: u for u in load(batch)}
        for entry in batch:
            unit = loaded.get(entry.artifact_id)
            cost = unit_cost(unit) if unit else 0
            if unit is not None and cost <= remaining:
                kept.append(unit)
                remaining -= cost
                misfits = 0
            else:
                left_out.append(entry)
                misfits += 1
    left_out.extend(ranked[i:])
    return kept, left_out, budget - remaining


Trimmed = KnowledgeAnswer | ProvenanceAnswer | SearchAnswer
"""The answers whose units are ranked and trimmed to a budget."""


def fill(
    answer: Trimmed,
    ranked: Sequence[Entry],
    load: Callable[[Sequence[Entry]], list[Unit]],
    budget: int,
    hint: str,
) -> int:
    """Put into ``answer`` the best units that fit ``budget`` tokens with it, and count the rest in
    its ``omitted``; returns the estimated tokens of the whole answer.

    The envelope is measured with every candidate counted as omitted (its largest form), so the
    finished answer never exceeds the budget.
    """
    answer.units, answer.omitted = [], omitted_of(ranked, hint)
    envelope = estimate_tokens(compact_json(answer.model_dump(mode="json"))) + 8
    units, left_out, used = fit(ranked, load, budget - envelope)
    answer.units, answer.omitted = units, omitted_of(left_out, hint)
    return envelope + used
