"""Grounding rows found by their artifact through a single-column index, not a four-column key.

``artifact_derived_from``'s primary key ``(artifact_id, span_id, path, role)`` was the largest
structure a full index built: for Django's 334k grounding rows, 90 MB of B-tree over 65 MB of
rows (two 64-character ids, a path and a role per entry), each entry inserted at a random leaf
(artifact ids are hashes). Dropping it for a plain index on ``artifact_id``, which B-tree
deduplication keeps to ~8 MB (an artifact has ~4 rows), took the embedded server's CPU for a full
Django index from 8.28 to 7.48 s and from 9.50 to 7.53 s (medians of four and of three
alternating rounds, every round lower), the index's wall time 15.57 -> 14.91 s and 17.40 -> 15.74
s. A unique index on ``(artifact_id, md5(span_id || path || role))`` instead gained nothing
(8.55 -> 8.88 s of server CPU, three rounds): the cost is the width of a unique entry.

Every read of the table asks by ``artifact_id`` (an artifact's grounding, the grounded check, the
reference checks' cascade) or by ``span_id`` (its own index, unchanged): the plans of the
whole-snapshot reads are the same (``kb export``'s grounding read: the same plan, 337 / 345 ms).

The key's uniqueness had one writer to hold to it, and still has: ``writes.insert_artifacts``, the
only code that inserts grounding rows, writes an artifact's rows once, in the statement after the
one that inserted the artifact, each distinct row once (an artifact's id is the digest of its
distinct rows, so a second set of rows for the same id can only be the same rows). A repeated row
no longer fails the statement; the reproducibility gate's stored sample reports one.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0009"
down_revision: str | Sequence[str] | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UPGRADE = (
    "CREATE INDEX ix_artifact_derived_from_artifact_id ON artifact_derived_from (artifact_id)",
    "ALTER TABLE artifact_derived_from DROP CONSTRAINT pk_artifact_derived_from",
)

DOWNGRADE = (
    """ALTER TABLE artifact_derived_from
       ADD CONSTRAINT pk_artifact_derived_from PRIMARY KEY (artifact_id, span_id, path, role)""",
    "DROP INDEX ix_artifact_derived_from_artifact_id",
)
"""Back to the key: fails (and changes nothing) if a row was stored twice meanwhile."""


def upgrade() -> None:
    """The artifact-id index, then the key dropped (reads by artifact keep an index throughout)."""
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    """0008's four-column primary key."""
    for statement in DOWNGRADE:
        op.execute(statement)
