"""Placing grounding edges at a commit (``records_by_id``): by one probe per edge for a few
artifacts and by one join over the commit's occurrences for many, with the same answer either way."""

from __future__ import annotations

import dataclasses

import pytest
import sqlalchemy as sa

from kb_assets.core.models import Grounding
from kb_resources.store import reads, serving_reads
from kb_resources.store.engine import Store
from tests.storefixtures import grounded, publish, seed_commit, sha_of, span

SHA = sha_of("placed")
ALPHA = span("alpha", 1, 3)
BETA = span("beta", 5, 9)
TWICE = span("twice", 10, 12)
TWICE_AGAIN = dataclasses.replace(TWICE, start_line=20, end_line=22)
GONE = span("gone", 1, 2)


def _placements(store: Store, ids: list[str]) -> dict[str, set[tuple[object, ...]]]:
    with store.engine.connect() as conn:
        records = reads.records_by_id(conn, SHA, ids)
    return {
        aid: {(g.span_id, g.path, g.role, g.start_line, g.end_line) for g in rec.grounding}
        for aid, rec in records.items()
    }


@pytest.mark.parametrize("few", [serving_reads.FEW_PLACED, 0])
def test_edges_are_placed_alike_by_probes_and_by_the_join(
    store: Store, few: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An edge on a span of the commit gets its lines, one on a file the commit lacks gets none,
    and a span that occurs twice in one file is placed at both occurrences, whichever way."""
    monkeypatch.setattr(serving_reads, "FEW_PLACED", few)
    caller, callee = Grounding(ALPHA.span_id, "m.py", "caller"), Grounding(BETA.span_id, "m.py", "callee")
    placed = grounded("call:a->b", [caller, callee])
    twice = grounded("call:t->t", [Grounding(TWICE.span_id, "m.py", "caller")])
    missing = grounded("call:a->gone", [caller, Grounding(GONE.span_id, "old.py", "callee")])
    with store.engine.begin() as conn:
        seed_commit(conn, sha_of("before"), {"old.py": [GONE]})  # the span exists, not at SHA
        seed_commit(conn, SHA, {"m.py": [ALPHA, BETA, TWICE, TWICE_AGAIN]})
        publish(conn, SHA, [placed, twice, missing])
        occurrences = conn.execute(sa.text("SELECT count(*) FROM span_occurrence WHERE sha = :s"), {"s": SHA})
        assert occurrences.scalar() == 4
    found = _placements(store, [placed.artifact_id, twice.artifact_id, missing.artifact_id])
    alpha, beta = (ALPHA.span_id, "m.py", "caller", 1, 3), (BETA.span_id, "m.py", "callee", 5, 9)
    twice_at = {(TWICE.span_id, "m.py", "caller", 10, 12), (TWICE.span_id, "m.py", "caller", 20, 22)}
    assert found == {
        placed.artifact_id: {alpha, beta},
        twice.artifact_id: twice_at,
        missing.artifact_id: {alpha, (GONE.span_id, "old.py", "callee", None, None)},
    }
