"""The shape of each partition's span and artifact frames, declared once (pandera on polars).

ids are 64 lowercase hex, lines are >= 1 and ordered, every artifact has >= 1 grounding row.
Validated by an asset check on every materialization.
"""

from __future__ import annotations

import pandera.polars as pa
import polars as pl

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


def validation_errors(schema: pa.DataFrameSchema, frame: pl.DataFrame) -> list[str]:
    """Every way ``frame`` breaks ``schema`` (empty when it conforms)."""
    try:
        schema.validate(frame, lazy=True)
    except pa.errors.SchemaErrors as err:
        return [str(row) for row in err.failure_cases.head(20).iter_rows()]
    return []
