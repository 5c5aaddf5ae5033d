"""Span, artifact, entry-set and chunk ids stored as their 32 bytes instead of 64 hex characters.

Every such id is a sha256 digest. As ``char(64)`` each took 65 bytes in a row and in every index
entry; the grounding rows hold two, the entry-set members two, and those two tables and their
indexes are most of a store. As ``bytea`` an id takes 33 bytes, and every join, sort and hash over
ids compares half as much. Measured on Django's write workload replayed on copies of the tables
(the artifacts and grounding rows in 22 batches, the 88k entry-set members, the statistics and two
reads, with the same indexes and reference triggers), three rounds each: 3.74-4.33 -> 2.95-3.05 s
of server time, the grounding table with its indexes 86 -> 59 MB. Through the real CLI, a full
Django index: the server's CPU 7.05 -> 5.69 s, wall 15.17 -> 14.42 s (medians of four
alternating rounds), the store 239 -> 180 MiB.

Knowbase's code, exports and answers keep spelling ids in hex: the conversion is the store's
(``kb_resources.store.hex_ids``). The checks that held a 64-character id to lowercase hex hold a
stored one to 32 bytes. Views over the columns, and the triggers and foreign keys that name them,
are dropped and created again around the change (PostgreSQL cannot change the type of a column
they depend on). The grounding-check functions that handle an id are adapted: the per-artifact
one declares a ``bytea`` variable, and the per-statement ones keep the due ids in hex text
(``_functions`` says why); each still names an artifact in hex. The statement reference checks
(migration 0003) compare ids of the same type on both sides and need no change; a violation's
detail now shows the key as PostgreSQL prints a ``bytea``, ``\\x`` and the hex digits.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | Sequence[str] | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ID_COLUMNS = (
    ("code_span", ("span_id",)),
    ("blob_span", ("span_id",)),
    ("artifact", ("artifact_id",)),
    ("artifact_derived_from", ("artifact_id", "span_id")),
    ("entry_set", ("set_id",)),
    ("entry_set_member", ("set_id", "artifact_id")),
    ("staged_part", ("set_id",)),
    ("snapshot_part", ("set_id",)),
    ("rag_chunk", ("chunk_id",)),
)
"""Every column that holds a 64-hex digest, by table (one ``ALTER TABLE``, one rewrite, each)."""

CHECKED = (("code_span", "span_id"), ("artifact", "artifact_id"), ("rag_chunk", "chunk_id"))
"""The columns that carry a check of their own (the others refer to one of these)."""

VIEWS = ("span_occurrence", "staged_entry", "snapshot_entry")


def _migration(name: str) -> ModuleType:
    """An earlier revision's module, for the statements this one restores or adapts (as 0007
    reads 0001's function)."""
    path = Path(__file__).with_name(name)
    spec = importlib.util.spec_from_file_location(f"_kb_0010_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load migration {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _replaced(text: str, changes: Sequence[tuple[str, str]]) -> str:
    """``text`` with each ``(old, new)`` applied; each ``old`` must occur, so an earlier revision
    that changed its text cannot be adapted by mistake."""
    for old, new in changes:
        if old not in text:
            raise ValueError(f"an earlier revision's statement no longer contains {old!r}")
        text = text.replace(old, new)
    return text


def _functions(as_bytes: bool) -> list[str]:
    """The grounding-check functions that handle ids: 0007's per-artifact one and 0008's
    per-statement ones, adapted to ``bytea`` ids when ``as_bytes``. The ids a statement leaves due
    stay hex text in ``artifact_grounding_due``: a table with pending (deferred) trigger events
    cannot change type, and a migration may run in a transaction that inserted artifacts."""
    row_check = _migration("0007_grounded_check_probe_order.py")
    per_row: str = row_check._function(row_check._UNGROUNDED, row_check._EXISTS)
    inserts = _migration("0008_cheaper_artifact_inserts.py")
    replace = [("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION")]
    due: str = _replaced(inserts.DUE_FUNCTION, replace)
    per_set: str = _replaced(inserts.SET_CHECK_FUNCTION, replace)
    if as_bytes:
        per_row = _replaced(
            per_row, [("aid char(64);", "aid bytea;"), ("from', aid", "from', encode(aid, 'hex')")]
        )
        due = _replaced(due, [("array_agg(artifact_id)", "array_agg(encode(artifact_id, 'hex'))")])
        per_set = _replaced(
            per_set,
            [
                ("d.artifact_id = a.id", "d.artifact_id = decode(a.id, 'hex')"),
                ("p.artifact_id = missing", "p.artifact_id = decode(missing, 'hex')"),
            ],
        )
    return [per_row, due, per_set]


def _views() -> list[str]:
    """0002's and 0006's views, as they were created."""
    occurrence: str = _migration("0002_span_occurrence_view.py").SPAN_OCCURRENCE_VIEW
    entries: tuple[str, ...] = _migration("0006_entry_sets.py").VIEWS
    return [occurrence, *entries]


def _types(type_: str, using: str) -> list[str]:
    """One ``ALTER TABLE`` per table of ``ID_COLUMNS``: each id column to ``type_``, converted by
    ``using`` (a template over ``column``)."""
    statements = []
    for table, columns in ID_COLUMNS:
        changes = ", ".join(
            f"ALTER COLUMN {column} TYPE {type_} USING {using.format(column=column)}" for column in columns
        )
        statements.append(f"ALTER TABLE {table} {changes}")
    return statements


HEX_CHECK = ("ck_{table}_ck_{table}_{column}_hex", "length({column}) = 64 AND {column} !~ '[^0-9a-f]'")
"""0005's check of a checked column: its name (as 0001's naming left it) and its condition
(templates over ``table`` and ``column``)."""

BYTES_CHECK = ("ck_{table}_{column}_length", "octet_length({column}) = 32")
"""This revision's check of a checked column, likewise."""


def _checks(old: tuple[str, str], new: tuple[str, str]) -> tuple[list[str], list[str]]:
    """(drop ``old``, add ``new``) for every checked column."""
    drops, adds = [], []
    for t, c in CHECKED:
        drops.append(f"ALTER TABLE {t} DROP CONSTRAINT {old[0].format(table=t, column=c)}")
        name, condition = (part.format(table=t, column=c) for part in new)
        adds.append(f"ALTER TABLE {t} ADD CONSTRAINT {name} CHECK ({condition})")
    return drops, adds


COLUMN_TRIGGERS = sa.text(
    """
    SELECT DISTINCT t.tgname, t.tgrelid::regclass::text AS tab, pg_get_triggerdef(t.oid) AS definition
      FROM pg_depend d JOIN pg_trigger t ON d.classid = 'pg_trigger'::regclass AND d.objid = t.oid
     WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid = ANY(CAST(:tables AS regclass[]))
       AND d.refobjsubid > 0 AND NOT t.tgisinternal
     ORDER BY 2, 1
    """
)
"""The triggers that name an id column (``UPDATE OF``, ``WHEN``): PostgreSQL cannot change the
type of such a column, so they are dropped around the change and created again as they were."""


REFERENCING_KEYS = sa.text(
    """
    SELECT c.conname, c.conrelid::regclass::text AS tab, pg_get_constraintdef(c.oid) AS definition
      FROM pg_constraint c
     WHERE c.contype = 'f' AND c.confrelid = ANY(CAST(:tables AS regclass[]))
     ORDER BY 2, 1
    """
)
"""The foreign keys to a table with an id column (``staged_part`` and ``snapshot_part`` to
``entry_set``): both sides of one must change type together, so they too are dropped around the
change and added again as they were."""


def _retyped(type_: str, using: str) -> list[str]:
    """``_types``, between dropping and re-creating the triggers and foreign keys that depend on
    the columns (their definitions read from the catalog, as the earlier revisions made them)."""
    tables = [table for table, _ in ID_COLUMNS]
    conn = op.get_bind()
    triggers = conn.execute(COLUMN_TRIGGERS, {"tables": tables}).all()
    keys = conn.execute(REFERENCING_KEYS, {"tables": tables}).all()
    drops = [f"DROP TRIGGER {name} ON {table}" for name, table, _ in triggers]
    drops += [f"ALTER TABLE {table} DROP CONSTRAINT {name}" for name, table, _ in keys]
    adds = [f"ALTER TABLE {table} ADD CONSTRAINT {name} {definition}" for name, table, definition in keys]
    return [*drops, *_types(type_, using), *adds, *(definition for _, _, definition in triggers)]


def _analyze() -> list[str]:
    """Fresh statistics for the rewritten tables: a change of type discards a column's."""
    return [f"ANALYZE {table}" for table, _ in ID_COLUMNS]


def _statements(*, as_bytes: bool) -> list[str]:
    """Every id column to ``bytea`` (``as_bytes``) or back to ``char(64)``, with the checks,
    functions and views that depend on the type."""
    drops, adds = _checks(HEX_CHECK, BYTES_CHECK) if as_bytes else _checks(BYTES_CHECK, HEX_CHECK)
    type_, using = (
        ("bytea", "decode({column}, 'hex')") if as_bytes else ("char(64)", "encode({column}, 'hex')")
    )
    views = [f"DROP VIEW {view}" for view in VIEWS]
    return [
        *views,
        *drops,
        *_retyped(type_, using),
        *adds,
        *_functions(as_bytes=as_bytes),
        *_views(),
        *_analyze(),
    ]


def upgrade() -> None:
    """Every id column to ``bytea``. Every statement is generated from the constants above, the
    earlier revisions' own and the catalog's definitions of their triggers (no outside input)."""
    for statement in _statements(as_bytes=True):
        op.execute(statement)


def downgrade() -> None:
    """Back to ``char(64)`` hex ids, 0005's checks and 0008's functions."""
    for statement in _statements(as_bytes=False):
        op.execute(statement)
