"""Cheaper artifact inserts: logical keys under a hash index, and the grounding check run once per
statement instead of once per artifact.

Two costs the server paid per inserted artifact, measured on Django's 75,908 call edges COPYed
again into a store that had just indexed them (each variant in its own transaction, rolled back
and vacuumed between rounds):

* the B-tree on ``(kind, logical_key)``: the COPY took 0.85-1.16 s with it, 0.47-0.50 s without
  it and 0.55-0.59 s with a hash index on ``logical_key`` instead. A call edge's key is ~117
  characters, inserted in artifact-id order, so each insert lands on a random leaf. Every read of
  the index asks for equal keys (``kind = k.kind AND logical_key = k.logical_key`` when a commit's
  moved keys are paired, ``logical_key = ANY(...)`` for a model pass's prior payloads), which a
  hash index answers (the key names its kind: ``call:...``, ``route:...``).
* ``artifact_grounded_check``, a deferred constraint trigger that ran its PL/pgSQL once per
  inserted artifact at COMMIT: 0.47-0.60 s for the same 75,908 (``SET CONSTRAINTS ... IMMEDIATE``).

Constraint triggers are row-level only, so the check now hangs on one row per statement: a
statement-level trigger on ``artifact`` records the ids the statement inserted as one row of
``artifact_grounding_due``, the deferred constraint trigger ``artifact_grounded_check`` on that
table fires once for the row at COMMIT, checks all its ids with one anti-join and deletes the row
(0.11 s for the same 75,908). The rule is unchanged: the COMMIT fails, naming the constraint
``artifact_grounded_check`` and one such artifact, when an artifact inserted in the transaction
still exists and has no grounding row. The per-row function stays for the two row events that are
rare (an artifact's id updated, a grounding row deleted or moved to another artifact); ``SET
CONSTRAINTS artifact_grounded_check`` still names every one of these triggers.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0008"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

KEY_INDEX_BEFORE = "CREATE INDEX ix_artifact_kind_logical_key ON artifact (kind, logical_key)"
KEY_INDEX_AFTER = "CREATE INDEX ix_artifact_logical_key ON artifact USING hash (logical_key)"

DUE_TABLE = """
CREATE TABLE artifact_grounding_due (
    due bigint GENERATED ALWAYS AS IDENTITY,
    ids char(64)[] NOT NULL,
    CONSTRAINT pk_artifact_grounding_due PRIMARY KEY (due)
)
"""

DUE_FUNCTION = """
CREATE FUNCTION artifact_grounding_due() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO artifact_grounding_due (ids)
    SELECT array_agg(artifact_id) FROM new_rows HAVING count(*) > 0;
    RETURN NULL;
END
$$
"""

SET_CHECK_FUNCTION = """
CREATE FUNCTION artifact_grounded_set_check() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    missing text;
BEGIN
    FOR missing IN SELECT a.id FROM unnest(NEW.ids) AS a(id)
                    WHERE NOT EXISTS (SELECT 1 FROM artifact_derived_from d WHERE d.artifact_id = a.id)
    LOOP
        IF EXISTS (SELECT 1 FROM artifact p WHERE p.artifact_id = missing) THEN
            RAISE EXCEPTION 'artifact_grounded_check: artifact % has no row in artifact_derived_from', missing
                USING ERRCODE = 'check_violation', CONSTRAINT = 'artifact_grounded_check',
                      HINT = 'every artifact needs at least one grounding span occurrence';
        END IF;
    END LOOP;
    DELETE FROM artifact_grounding_due WHERE due = NEW.due;
    RETURN NULL;
END
$$
"""
"""The ids without a grounding row are found by one anti-join (one probe each); only those, none
in a healthy run, are then looked up in ``artifact`` (0.11 s for 75,908 ids, against 0.21-0.29 s
when one query also asked every id's existence)."""


UPGRADE = (
    "DROP INDEX ix_artifact_kind_logical_key",
    KEY_INDEX_AFTER,
    DUE_TABLE,
    DUE_FUNCTION,
    SET_CHECK_FUNCTION,
    """CREATE TRIGGER artifact_grounding_due AFTER INSERT ON artifact
       REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION artifact_grounding_due()""",
    """CREATE CONSTRAINT TRIGGER artifact_grounded_check AFTER INSERT ON artifact_grounding_due
       DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION artifact_grounded_set_check()""",
    "DROP TRIGGER artifact_grounded_check ON artifact",
    """CREATE CONSTRAINT TRIGGER artifact_grounded_check AFTER UPDATE OF artifact_id ON artifact
       DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION artifact_grounded_check()""",
)

DOWNGRADE = (
    "DROP TRIGGER artifact_grounded_check ON artifact",
    """CREATE CONSTRAINT TRIGGER artifact_grounded_check AFTER INSERT OR UPDATE OF artifact_id ON artifact
       DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION artifact_grounded_check()""",
    "DROP TRIGGER artifact_grounding_due ON artifact",
    "DROP TABLE artifact_grounding_due",  # with its constraint trigger
    "DROP FUNCTION artifact_grounded_set_check()",
    "DROP FUNCTION artifact_grounding_due()",
    "DROP INDEX ix_artifact_logical_key",
    KEY_INDEX_BEFORE,
)


def upgrade() -> None:
    """The hash index on logical keys, and the grounding check of inserts once per statement."""
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    """0007's B-tree on (kind, logical key) and per-artifact check."""
    for statement in DOWNGRADE:
        op.execute(statement)
