"""A commit's staged and published entries are stored as shared, content-addressed sets of ids.

``staged_entry`` and ``snapshot_entry`` held one row per commit and artifact: 88k + 88k rows for
each Django commit, ~80 MB a commit whatever it changed, and a copy of 88k rows on every publish.
Now an extractor's ids at a commit are cut into buckets by id prefix; each bucket is stored once
in ``entry_set`` / ``entry_set_member`` under the hash of its members, and a commit keeps one
``staged_part`` / ``snapshot_part`` row per bucket naming its set (``kb_resources.store.
entry_sets`` has the rules, ``ENTRY_SET_VERSION`` 1, applied here in SQL). The two old names
become views with the old columns (``snapshot_entry`` gains ``extractor_id``), so readers are
unchanged.

References: the part tables are small (hundreds of rows a commit) and keep ordinary foreign keys;
``entry_set_member`` gets 0003's statement-level checks with 0004's distinct-key probes, generated
by those revisions' own code over this revision's list of references.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _revision_module(filename: str) -> ModuleType:
    """A private copy of an earlier revision's module, to reuse its statement generators."""
    path = Path(__file__).with_name(filename)
    spec = importlib.util.spec_from_file_location(f"_kb_0006_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load migration {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _reference_statements(
    references: Sequence[tuple[str, str, str, bool]], children: Sequence[str], parents: Sequence[str]
) -> list[str]:
    """0003's child and parent trigger functions for ``children`` and ``parents``, then 0004's
    distinct-key child checks, all generated from ``references`` (child, column, parent, cascade)."""
    r3 = _revision_module("0003_statement_references.py")
    r4 = _revision_module("0004_distinct_reference_checks.py")
    r3.REFERENCES = tuple(r3.Reference(*reference) for reference in references)
    statements: list[str] = []
    for child in children:
        statements += r3._child_statements(child)
    for parent in parents:
        statements += r3._parent_statements(parent)
    r4.REFERENCES = tuple(
        r4.Reference(child, column, parent) for child, column, parent, _ in references if child in children
    )
    return statements + r4._child_functions(r4.DISTINCT)


KEPT_REFERENCES = (
    ("artifact_derived_from", "artifact_id", "artifact", True),
    ("artifact_derived_from", "span_id", "code_span", False),
    ("blob_span", "span_id", "code_span", False),
)
"""References no revision since 0003 changed (they take part in the ``artifact`` parent checks)."""

NEW_REFERENCES = (
    ("entry_set_member", "set_id", "entry_set", True),
    ("entry_set_member", "artifact_id", "artifact", False),
    *KEPT_REFERENCES,
)
OLD_REFERENCES = (
    ("staged_entry", "sha", "commit_ref", True),
    ("staged_entry", "artifact_id", "artifact", False),
    ("snapshot_entry", "sha", "commit_ref", True),
    ("snapshot_entry", "artifact_id", "artifact", False),
    *KEPT_REFERENCES,
)
"""Both lists in 0003's order: entries first, so a refused key change on ``artifact`` names the
snapshot membership that holds it before its grounding."""

VIEWS = (
    """CREATE VIEW staged_entry AS
SELECT p.sha, p.extractor_id, m.artifact_id
  FROM staged_part p JOIN entry_set_member m ON m.set_id = p.set_id""",
    """CREATE VIEW snapshot_entry AS
SELECT p.sha, p.extractor_id, m.artifact_id
  FROM snapshot_part p JOIN entry_set_member m ON m.set_id = p.set_id""",
)

# The rules of ``entry_sets`` (version 1) in SQL: the prefix width is (bit_length(n) + 3) / 8 for
# a set of n ids, the set id the sha256 of 'entry-set:1' and the sorted ids, newline-separated.
PARTS = """
CREATE TEMP TABLE kb_0006_part ON COMMIT DROP AS
WITH entry AS (
  SELECT 'staged' AS kind, sha, extractor_id, artifact_id::text AS artifact_id FROM staged_entry
  UNION ALL
  SELECT 'snapshot', s.sha, a.extractor_id, s.artifact_id::text
    FROM snapshot_entry s JOIN artifact a ON a.artifact_id = s.artifact_id),
width AS (
  SELECT kind, sha, extractor_id, (length(ltrim(count(*)::int::bit(32)::text, '0')) + 3) / 8 AS width
    FROM entry GROUP BY kind, sha, extractor_id)
SELECT e.kind, e.sha, e.extractor_id, left(e.artifact_id, w.width) AS prefix,
       encode(sha256(convert_to('entry-set:1' || E'\\n'
                                || string_agg(e.artifact_id, E'\\n' ORDER BY e.artifact_id COLLATE "C"),
                                'UTF8')), 'hex') AS set_id,
       array_agg(e.artifact_id ORDER BY e.artifact_id COLLATE "C") AS members
  FROM entry e JOIN width w USING (kind, sha, extractor_id)
 GROUP BY e.kind, e.sha, e.extractor_id, left(e.artifact_id, w.width)
"""
FILL = (
    """INSERT INTO entry_set (set_id, size)
SELECT DISTINCT set_id, cardinality(members) FROM kb_0006_part""",
    """INSERT INTO entry_set_member (set_id, artifact_id)
SELECT s.set_id, m.artifact_id
  FROM (SELECT DISTINCT ON (set_id) set_id, members FROM kb_0006_part ORDER BY set_id) s,
       unnest(s.members) AS m(artifact_id)""",
    """INSERT INTO staged_part (sha, extractor_id, prefix, set_id)
SELECT sha, extractor_id, prefix, set_id FROM kb_0006_part WHERE kind = 'staged'""",
    """INSERT INTO snapshot_part (sha, extractor_id, prefix, set_id)
SELECT sha, extractor_id, prefix, set_id FROM kb_0006_part WHERE kind = 'snapshot'""",
)

EXPAND = (
    """INSERT INTO staged_entry (sha, extractor_id, artifact_id)
SELECT p.sha, p.extractor_id, m.artifact_id
  FROM staged_part p JOIN entry_set_member m ON m.set_id = p.set_id""",
    """INSERT INTO snapshot_entry (sha, artifact_id)
SELECT DISTINCT p.sha, m.artifact_id
  FROM snapshot_part p JOIN entry_set_member m ON m.set_id = p.set_id""",
)
"""The downgrade's entries, one row per commit and id again."""


def _create_set_tables() -> None:
    op.create_table(
        "entry_set",
        sa.Column("set_id", sa.CHAR(64), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.CheckConstraint("size >= 1", name="ck_entry_set_size"),
        sa.PrimaryKeyConstraint("set_id", name="pk_entry_set"),
    )
    op.create_table(
        "entry_set_member",
        sa.Column("set_id", sa.CHAR(64), nullable=False),
        sa.Column("artifact_id", sa.CHAR(64), nullable=False),
        sa.PrimaryKeyConstraint("set_id", "artifact_id", name="pk_entry_set_member"),
    )
    op.create_index("ix_entry_set_member_artifact_id", "entry_set_member", ["artifact_id"])
    for table in ("staged_part", "snapshot_part"):
        op.create_table(
            table,
            sa.Column("sha", sa.CHAR(40), nullable=False),
            sa.Column("extractor_id", sa.Text(), nullable=False),
            sa.Column("prefix", sa.Text(), nullable=False),
            sa.Column("set_id", sa.CHAR(64), nullable=False),
            sa.PrimaryKeyConstraint("sha", "extractor_id", "prefix", name=f"pk_{table}"),
            sa.ForeignKeyConstraint(
                ["sha"], ["commit_ref.sha"], name=f"fk_{table}_sha_commit_ref", ondelete="CASCADE"
            ),
            sa.ForeignKeyConstraint(["set_id"], ["entry_set.set_id"], name=f"fk_{table}_set_id_entry_set"),
        )
        op.create_index(f"ix_{table}_set_id", table, ["set_id"])


def _drop_functions(names: Sequence[str]) -> None:
    """Drop the named trigger functions (CASCADE drops their triggers); names are constants."""
    for statement in [f"DROP FUNCTION IF EXISTS {name}() CASCADE" for name in names]:
        op.execute(statement)


def upgrade() -> None:
    """Sets and parts from the stored entries; the entry tables become views over them.

    Every statement is generated from the constants above (no outside input)."""
    _create_set_tables()
    op.execute(PARTS)
    for statement in FILL:
        op.execute(statement)
    op.execute("DROP TABLE kb_0006_part")
    _drop_functions(
        [
            "kb_ref_staged_entry",
            "kb_ref_snapshot_entry",
            "kb_ref_parent_commit_ref",
            "kb_ref_parent_commit_ref_key",
            "kb_ref_parent_artifact",
            "kb_ref_parent_artifact_key",
        ]
    )
    op.drop_table("snapshot_entry")
    op.drop_table("staged_entry")
    for statement in _reference_statements(NEW_REFERENCES, ["entry_set_member"], ["artifact", "entry_set"]):
        op.execute(statement)
    for view in VIEWS:
        op.execute(view)
    op.execute("ANALYZE entry_set, entry_set_member, staged_part, snapshot_part")


def downgrade() -> None:
    """Back to one row per commit and entry, expanded from the sets."""
    op.execute("DROP VIEW snapshot_entry")
    op.execute("DROP VIEW staged_entry")
    op.create_table(
        "staged_entry",
        sa.Column("sha", sa.CHAR(40), nullable=False),
        sa.Column("extractor_id", sa.Text(), nullable=False),
        sa.Column("artifact_id", sa.CHAR(64), nullable=False),
        sa.PrimaryKeyConstraint("sha", "extractor_id", "artifact_id", name="pk_staged_entry"),
    )
    op.create_table(
        "snapshot_entry",
        sa.Column("sha", sa.CHAR(40), nullable=False),
        sa.Column("artifact_id", sa.CHAR(64), nullable=False),
        sa.PrimaryKeyConstraint("sha", "artifact_id", name="pk_snapshot_entry"),
    )
    op.create_index("ix_snapshot_entry_artifact_id", "snapshot_entry", ["artifact_id"])
    for statement in EXPAND:
        op.execute(statement)
    _drop_functions(
        [
            "kb_ref_entry_set_member",
            "kb_ref_parent_entry_set",
            "kb_ref_parent_entry_set_key",
            "kb_ref_parent_artifact",
            "kb_ref_parent_artifact_key",
        ]
    )
    for table in ("snapshot_part", "staged_part", "entry_set_member", "entry_set"):
        op.drop_table(table)
    children = ["staged_entry", "snapshot_entry"]
    for statement in _reference_statements(OLD_REFERENCES, children, ["artifact", "commit_ref"]):
        op.execute(statement)
