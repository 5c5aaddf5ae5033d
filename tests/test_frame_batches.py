"""The frame checks read and validate a staged set, or a commit's span occurrences, batch by
batch and find what the whole frame's validation finds: a bad row in any batch, a duplicate id
across two batches."""

from __future__ import annotations

import polars as pl
import pytest
import sqlalchemy as sa

from kb_assets.core.models import Grounding
from kb_gates import gates
from kb_gates.frames import ARTIFACT_FRAME, SPAN_FRAME, batched_errors, row_errors, validation_errors
from kb_resources.store import commit_reads, reads
from kb_resources.store.engine import Store
from kb_resources.store.schema import artifact_derived_from
from tests.storefixtures import PARSER_VERSION, grounded, publish, seed_commit, sha_of, span

SHA = sha_of("frames")
ALPHA = span("alpha", 1, 3)
GOOD = ["a" * 64, "b" * 64, "c" * 64, "d" * 64, "e" * 64]


def _frame(ids: list[str], counts: list[int] | None = None) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "artifact_id": ids,
            "logical_key": [f"k{i}" for i in range(len(ids))],
            "grounding_rows": counts or [1] * len(ids),
        },
        schema={"artifact_id": pl.Utf8, "logical_key": pl.Utf8, "grounding_rows": pl.Int64},
    )


def test_batches_that_conform_are_counted_and_pass() -> None:
    """Rows of every batch are counted; sorted, distinct, well-formed rows give no error."""
    batches = [_frame(GOOD[:2]), _frame(GOOD[2:])]
    assert batched_errors(ARTIFACT_FRAME, batches, ordered_unique="artifact_id") == (5, [])
    assert batched_errors(ARTIFACT_FRAME, [], ordered_unique="artifact_id") == (0, [])


def test_an_id_repeated_across_two_batches_is_found() -> None:
    """The whole frame's ``unique`` check would reject a repeated id; split across the boundary of
    two sorted batches, the boundary check does."""
    batches = [_frame(GOOD[:3]), _frame([GOOD[2], GOOD[3]])]
    whole = validation_errors(ARTIFACT_FRAME, pl.concat(batches))
    checked, errors = batched_errors(ARTIFACT_FRAME, batches, ordered_unique="artifact_id")
    assert whole
    assert checked == 5
    assert errors == [f"artifact_id {GOOD[2]} is not unique"]


def test_a_bad_row_in_a_later_batch_is_reported() -> None:
    """A malformed id or an artifact without grounding rows fails the check from any batch."""
    checked, errors = batched_errors(
        ARTIFACT_FRAME, [_frame(GOOD[:2]), _frame(["not-hex", GOOD[4]], [1, 0])], ordered_unique="artifact_id"
    )
    assert checked == 4
    assert any("not-hex" in e for e in errors)
    assert any("grounding_rows" in e for e in errors)


@pytest.mark.parametrize("batch", [1, 2, commit_reads.GROUNDING_BATCH])
def test_a_staged_set_reads_the_same_in_any_batch_size(
    store: Store, batch: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Streamed in batches of one, two or the default, a staged set's grounding counts and frame
    are the whole read's, in artifact id order."""
    monkeypatch.setattr(commit_reads, "GROUNDING_BATCH", batch)
    items = [grounded(f"call:{n}", [Grounding(ALPHA.span_id, "m.py", "caller")]) for n in range(5)]
    with store.engine.begin() as conn:
        seed_commit(conn, SHA, {"m.py": [ALPHA]})
        publish(conn, SHA, items)
    with store.engine.connect() as conn:
        batches = list(reads.staged_grounding_batches(conn, SHA, "test"))
    expected = sorted((i.artifact_id, i.logical_key, 1) for i in items)
    assert [row for b in batches for row in b] == expected
    assert len(batches) == -(-len(items) // batch)
    read = list(gates.artifact_rows(store.engine, SHA, "test"))
    assert row_errors("artifact", read, ordered_unique="artifact_id") == (5, [])
    assert [row for rows in read for row in rows] == expected


@pytest.mark.parametrize("batch", [1, 2, reads.SPAN_FRAME_BATCH])
def test_span_occurrences_read_the_same_in_any_batch_size(
    store: Store, batch: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Streamed in batches of one, two or the default, the span frame's rows are the commit's
    occurrences in ``span_occurrences``' order, and they pass the check."""
    monkeypatch.setattr(reads, "SPAN_FRAME_BATCH", batch)
    monkeypatch.setattr(gates, "parser_version", lambda: PARSER_VERSION)  # the fixture's blobs
    with store.engine.begin() as conn:
        seed_commit(conn, SHA, {"m.py": [ALPHA, span("beta", 5, 9)], "a.py": [span("gamma", 2, 2)]})
    with store.engine.connect() as conn:
        whole = reads.span_occurrences(conn, SHA, PARSER_VERSION)
        batches = list(reads.span_frame_batches(conn, SHA, PARSER_VERSION))
    assert [row for b in batches for row in b] == [
        (o.span_id, o.path, o.start_line, o.end_line) for o in whole
    ]
    assert len(batches) == -(-len(whole) // batch)
    assert [list(rows) for rows in gates.span_rows(store.engine, SHA)] == batches
    assert row_errors("span", gates.span_rows(store.engine, SHA)) == (3, [])


def test_a_bad_span_row_in_a_later_batch_is_reported() -> None:
    """A span ending before it starts, or a malformed id, fails the span frame from any batch."""
    good = pl.DataFrame({"span_id": [GOOD[0]], "path": ["m.py"], "start_line": [1], "end_line": [2]})
    bad = pl.DataFrame(
        {"span_id": [GOOD[1], "xyz"], "path": ["m.py", "m.py"], "start_line": [5, 1], "end_line": [4, 1]}
    )
    checked, errors = batched_errors(SPAN_FRAME, [good, bad])
    assert checked == 3
    assert errors
    assert any("xyz" in e for e in errors)
    assert validation_errors(SPAN_FRAME, good) == []


@pytest.mark.parametrize("few_staged", [commit_reads.FEW_STAGED, 0], ids=["probed", "grouped"])
def test_grounding_rows_are_counted_alike_under_either_plan(
    store: Store, few_staged: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A small staged set's counts come from a probe per artifact, a large one's from one
    aggregate (``commit_reads._grounding_counts``): both give each artifact's number of grounding rows, in
    id order, and an artifact whose grounding was removed behind the store's triggers' back keeps
    its row with 0, which is what the frame check rejects."""
    monkeypatch.setattr(commit_reads, "FEW_STAGED", few_staged)
    beta = span("beta", 5, 9)
    one = grounded("call:one", [Grounding(ALPHA.span_id, "m.py", "caller")])
    two = grounded(
        "call:two", [Grounding(ALPHA.span_id, "m.py", "caller"), Grounding(beta.span_id, "m.py", "callee")]
    )
    lost = grounded("call:lost", [Grounding(beta.span_id, "m.py", "caller")])
    with store.engine.begin() as conn:
        seed_commit(conn, SHA, {"m.py": [ALPHA, beta]})
        publish(conn, SHA, [one, two, lost])
    with store.engine.begin() as conn:
        conn.exec_driver_sql("SET LOCAL session_replication_role = replica")  # no trigger fires
        conn.execute(
            sa.delete(artifact_derived_from).where(artifact_derived_from.c.artifact_id == lost.artifact_id)
        )
    with store.engine.connect() as conn:
        counts = [row for batch in reads.staged_grounding_batches(conn, SHA, "test") for row in batch]
    assert counts == sorted(
        [
            (one.artifact_id, "call:one", 1),
            (two.artifact_id, "call:two", 2),
            (lost.artifact_id, "call:lost", 0),
        ]
    )
    checked, errors = row_errors(
        "artifact", gates.artifact_rows(store.engine, SHA, "test"), ordered_unique="artifact_id"
    )
    assert checked == 3
    assert any("grounding_rows" in e for e in errors)
