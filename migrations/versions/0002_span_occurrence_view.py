"""span_occurrence becomes a view over commit_file x blob_span.

A commit's span occurrences are fully determined by its files' blobs and the cached spans of
those blobs, so copying them per commit (tens of thousands of rows for a Django-sized repository,
for every commit) bought nothing. ``commit_ref.parser_version`` names the blob spans that locate a
published snapshot; the view follows it.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SPAN_OCCURRENCE_VIEW = """
CREATE VIEW span_occurrence AS
SELECT f.sha, f.path, b.ordinal, b.span_id, b.start_line, b.end_line
  FROM commit_file f
  JOIN commit_ref c ON c.sha = f.sha
  JOIN blob_span b ON b.blob_id = f.blob_id AND b.parser_version = c.parser_version
"""


DROP_OCCURRENCE_TABLE = """
DO $$ BEGIN
  IF EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
              WHERE c.relname = 'span_occurrence' AND c.relkind = 'r' AND n.nspname = current_schema()) THEN
    DROP TABLE span_occurrence;
  END IF;
END $$
"""


def upgrade() -> None:
    """Replace the occurrence table by the view; add what the view and its lookups need.

    Written to be idempotent: stores made by a pre-release build of 0001 that already had the
    view upgrade cleanly too.
    """
    op.execute("ALTER TABLE commit_ref ADD COLUMN IF NOT EXISTS parser_version text")
    op.execute(DROP_OCCURRENCE_TABLE)
    op.execute("CREATE INDEX IF NOT EXISTS ix_commit_file_blob_id ON commit_file (blob_id)")
    op.execute("CREATE INDEX IF NOT EXISTS ix_blob_span_span_id ON blob_span (span_id)")
    op.execute(SPAN_OCCURRENCE_VIEW.replace("CREATE VIEW", "CREATE OR REPLACE VIEW"))


def downgrade() -> None:
    """Back to a (empty) occurrence table; snapshots must be re-indexed to fill it."""
    op.execute("DROP VIEW span_occurrence")
    op.drop_index("ix_blob_span_span_id", table_name="blob_span")
    op.drop_index("ix_commit_file_blob_id", table_name="commit_file")
    op.create_table(
        "span_occurrence",
        sa.Column("sha", sa.CHAR(40), sa.ForeignKey("commit_ref.sha", ondelete="CASCADE"), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("ordinal", sa.Integer(), nullable=False),
        sa.Column("span_id", sa.CHAR(64), sa.ForeignKey("code_span.span_id"), nullable=False),
        sa.Column("start_line", sa.Integer(), nullable=False),
        sa.Column("end_line", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("sha", "path", "ordinal", name="pk_span_occurrence"),
    )
    op.create_index("ix_span_occurrence_sha_span_id", "span_occurrence", ["sha", "span_id"])
    op.create_index("ix_span_occurrence_span_id", "span_occurrence", ["span_id"])
    op.drop_column("commit_ref", "parser_version")
