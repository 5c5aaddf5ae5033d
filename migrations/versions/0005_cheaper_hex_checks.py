"""Hex-id checks test the length and the absence of a non-hex character instead of a bounded
repetition.

``col ~ '^[0-9a-f]{64}$'`` costs PostgreSQL's regex engine ~6 us per row (a full Django index
writes 88k artifact ids and 58k span ids: ~0.9 s of checks); ``length(col) = 64 AND col !~
'[^0-9a-f]'`` accepts and refuses exactly the same values (``length`` of a ``CHAR(n)`` ignores its
padding, as the cast to text the regex applies to does; NULL still passes) for ~0.6 us.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

HEX_COLUMNS = (
    ("commit_ref", "sha", 40),
    ("commit_ref", "tree_id", 40),
    ("commit_ref", "base_sha", 40),
    ("branch_ref", "sha", 40),
    ("commit_file", "blob_id", 40),
    ("parsed_blob", "blob_id", 40),
    ("code_span", "span_id", 64),
    ("artifact", "artifact_id", 64),
    ("rag_chunk", "chunk_id", 64),
)
"""Every hex-id check of 0001, by table, column and width (its name doubles the table prefix,
as the naming convention applied to 0001's explicit names)."""


def _statements(expression: str) -> list[str]:
    """One ``ALTER TABLE`` per hex-id check, replacing it with ``expression`` (a template over
    ``column`` and ``width``)."""
    statements = []
    for table, column, width in HEX_COLUMNS:
        name = f"ck_{table}_ck_{table}_{column}_hex"
        check = expression.format(column=column, width=width)
        replace = f"DROP CONSTRAINT {name}, ADD CONSTRAINT {name} CHECK ({check})"
        statements.append(f"ALTER TABLE {table} {replace}")
    return statements


def upgrade() -> None:
    """Length and character-class checks. Every statement is generated from the constants above
    (no outside input)."""
    for statement in _statements("length({column}) = {width} AND {column} !~ '[^0-9a-f]'"):
        op.execute(statement)


def downgrade() -> None:
    """Back to 0001's bounded-repetition regexes."""
    for statement in _statements("{column} ~ '^[0-9a-f]{{{width}}}$'"):
        op.execute(statement)
