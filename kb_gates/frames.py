"""The shape of each partition's span and artifact frames, declared once (pandera on polars).

ids are 64 lowercase hex, lines are >= 1 and ordered, every artifact has >= 1 grounding row.
Validated by an asset check on every materialization, in the process ``check_process`` keeps for
it: a ``kb`` process itself never imports this module (nor pandera and polars) unless that
process cannot be had.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandera.polars as pa
import polars as pl

from kb_gates.check_process import Rows

HEX64 = r"^[0-9a-f]{64}$"

SPAN_FRAME = pa.DataFrameSchema(
    {
        "span_id": pa.Column(pl.Utf8, pa.Check.str_matches(HEX64)),
        "path": pa.Column(pl.Utf8, pa.Check.str_length(min_value=1)),
        "start_line": pa.Column(pl.Int64, pa.Check.ge(1)),
        "end_line": pa.Column(pl.Int64, pa.Check.ge(1)),
    },
    checks=[pa.Check(lambda data: data.lazyframe.select(pl.col("end_line") >= pl.col("start_line")))],
    name="span_frame",
)

ARTIFACT_FRAME = pa.DataFrameSchema(
    {
        "artifact_id": pa.Column(pl.Utf8, [pa.Check.str_matches(HEX64)], unique=True),
        "logical_key": pa.Column(pl.Utf8, pa.Check.str_length(min_value=1)),
        "grounding_rows": pa.Column(pl.Int64, pa.Check.ge(1)),
    },
    name="artifact_frame",
)


SPAN_COLUMNS = {"span_id": pl.Utf8, "path": pl.Utf8, "start_line": pl.Int64, "end_line": pl.Int64}
ARTIFACT_COLUMNS = {"artifact_id": pl.Utf8, "logical_key": pl.Utf8, "grounding_rows": pl.Int64}
"""The columns of the span and artifact frames, as the reads' rows hold them."""

FRAMES = {"span": (SPAN_FRAME, SPAN_COLUMNS), "artifact": (ARTIFACT_FRAME, ARTIFACT_COLUMNS)}
"""Each frame by the name a check asks for it by: its schema and its rows' columns."""


def row_errors(
    frame: str, batches: Iterable[Rows], *, ordered_unique: str | None = None
) -> tuple[int, list[str]]:
    """``batched_errors`` of the ``frame`` named, given its rows batch by batch."""
    schema, columns = FRAMES[frame]
    frames = (pl.DataFrame(list(rows), schema=columns, orient="row") for rows in batches)
    return batched_errors(schema, frames, ordered_unique=ordered_unique)


def validation_errors(schema: pa.DataFrameSchema, frame: pl.DataFrame) -> list[str]:
    """Every way ``frame`` breaks ``schema`` (empty when it conforms)."""
    try:
        schema.validate(frame, lazy=True)
    except pa.errors.SchemaErrors as err:
        return [str(row) for row in err.failure_cases.head(20).iter_rows()]
    return []


def batched_errors(
    schema: pa.DataFrameSchema, frames: Iterable[pl.DataFrame], *, ordered_unique: str | None = None
) -> tuple[int, list[str]]:
    """Rows checked and every way the concatenated ``frames`` break ``schema`` (at most 20 lines),
    validating one frame at a time. A column the schema declares unique is checked within each
    frame by the schema, and across frames by ``ordered_unique``: the frames come sorted on that
    column, so a value repeated across two frames is the last of one and the first of the next."""
    checked = 0
    errors: list[str] = []
    last: object = None
    for frame in frames:
        errors += validation_errors(schema, frame)[: 20 - len(errors)]
        if ordered_unique is not None and frame.height:
            first = frame[ordered_unique][0]
            if checked and first == last:
                errors.append(f"{ordered_unique} {first} is not unique")
            last = frame[ordered_unique][-1]
        checked += frame.height
    return checked, errors[:20]
