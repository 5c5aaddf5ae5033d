"""The initial knowledge store: commits, spans, artifacts with grounding, snapshots, gaps, RAG chunks.

Revision ID: 0001
Revises:
Create Date: 2026-11-29

Hand-written and frozen: it does not import kb_resources.store.schema, which describes the newest
schema and may move on. Constraint and index names follow schema.NAMING_CONVENTION.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from pgvector.sqlalchemy import VECTOR
from sqlalchemy.dialects.postgresql import ARRAY, JSONB

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = (
    "rag_chunk",
    "gap",
    "snapshot_entry",
    "staged_entry",
    "artifact_derived_from",
    "artifact",
    "span_occurrence",
    "blob_span",
    "code_span",
    "parsed_blob",
    "commit_file",
    "branch_ref",
    "commit_ref",
)

GROUNDED_CHECK_FUNCTION = """
CREATE FUNCTION artifact_grounded_check() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    aid char(64);
BEGIN
    IF TG_TABLE_NAME = 'artifact' THEN
        aid := NEW.artifact_id;
    ELSE
        aid := OLD.artifact_id;
    END IF;
    IF EXISTS (SELECT 1 FROM artifact WHERE artifact_id = aid)
       AND NOT EXISTS (SELECT 1 FROM artifact_derived_from WHERE artifact_id = aid) THEN
        RAISE EXCEPTION 'artifact_grounded_check: artifact % has no row in artifact_derived_from', aid
            USING ERRCODE = 'check_violation', CONSTRAINT = 'artifact_grounded_check',
                  HINT = 'every artifact needs at least one grounding span occurrence';
    END IF;
    RETURN NULL;
END
$$
"""

GROUNDED_CHECK_TRIGGERS = (
    """CREATE CONSTRAINT TRIGGER artifact_grounded_check AFTER INSERT OR UPDATE ON artifact
       DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION artifact_grounded_check()""",
    """CREATE CONSTRAINT TRIGGER artifact_grounded_check_on_grounding
       AFTER DELETE OR UPDATE OF artifact_id ON artifact_derived_from
       DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION artifact_grounded_check()""",
)


def _hex(table: str, column: str, width: int) -> sa.CheckConstraint:
    return sa.CheckConstraint(f"{column} ~ '^[0-9a-f]{{{width}}}$'", name=f"ck_{table}_{column}_hex")


def _lines(table: str) -> sa.CheckConstraint:
    return sa.CheckConstraint("start_line >= 1 AND end_line >= start_line", name=f"ck_{table}_lines")


def _pk(table: str, *columns: str) -> sa.PrimaryKeyConstraint:
    return sa.PrimaryKeyConstraint(*columns, name=f"pk_{table}")


def _fk(
    table: str, column: str, referred: str, *, cascade: bool = False, deferred: bool = False
) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [column],
        [f"{referred}.{column}"],
        name=f"fk_{table}_{column}_{referred}",
        ondelete="CASCADE" if cascade else None,
        deferrable=True if deferred else None,
        initially="DEFERRED" if deferred else None,
    )


def _commits() -> None:
    op.create_table(
        "commit_ref",
        sa.Column("sha", sa.CHAR(40), nullable=False),
        sa.Column("tree_id", sa.CHAR(40), nullable=False),
        sa.Column("parents", ARRAY(sa.Text()), nullable=False),
        sa.Column("committed_at", sa.TIMESTAMP(timezone=True), nullable=False),
        sa.Column("mode", sa.Text(), nullable=True),
        sa.Column("base_sha", sa.CHAR(40), nullable=True),
        sa.Column("published_at", sa.TIMESTAMP(timezone=True), nullable=True),
        sa.Column("stats", JSONB(), nullable=False, server_default=sa.text("'{}'::jsonb")),
        _pk("commit_ref", "sha"),
        _hex("commit_ref", "sha", 40),
        _hex("commit_ref", "tree_id", 40),
        _hex("commit_ref", "base_sha", 40),
        sa.CheckConstraint("mode IN ('full', 'incremental')", name="ck_commit_ref_mode"),
    )
    op.create_table(
        "branch_ref",
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("sha", sa.CHAR(40), nullable=False),
        sa.Column("updated_at", sa.TIMESTAMP(timezone=True), nullable=False),
        _pk("branch_ref", "name"),
        _hex("branch_ref", "sha", 40),
    )
    op.create_table(
        "commit_file",
        sa.Column("sha", sa.CHAR(40), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("blob_id", sa.CHAR(40), nullable=False),
        sa.Column("mode", sa.Text(), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("module", sa.Text(), nullable=True),
        sa.Column("is_package", sa.Boolean(), nullable=False, server_default=sa.false()),
        _pk("commit_file", "sha", "path"),
        _fk("commit_file", "sha", "commit_ref", cascade=True),
        _hex("commit_file", "blob_id", 40),
    )


def _spans() -> None:
    op.create_table(
        "parsed_blob",
        sa.Column("blob_id", sa.CHAR(40), nullable=False),
        sa.Column("parser_version", sa.Text(), nullable=False),
        sa.Column("line_count", sa.Integer(), nullable=False),
        sa.Column("facts", sa.LargeBinary(), nullable=False),
        sa.Column("gaps", JSONB(), nullable=False, server_default=sa.text("'[]'::jsonb")),
        _pk("parsed_blob", "blob_id", "parser_version"),
        _hex("parsed_blob", "blob_id", 40),
    )
    op.create_table(
        "code_span",
        sa.Column("span_id", sa.CHAR(64), nullable=False),
        sa.Column("lang", sa.Text(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("fq_symbol_path", sa.Text(), nullable=False),
        _pk("code_span", "span_id"),
        _hex("code_span", "span_id", 64),
    )
    op.create_table(
        "blob_span",
        sa.Column("blob_id", sa.CHAR(40), nullable=False),
        sa.Column("parser_version", sa.Text(), nullable=False),
        sa.Column("ordinal", sa.Integer(), nullable=False),
        sa.Column("span_id", sa.CHAR(64), nullable=False),
        sa.Column("start_line", sa.Integer(), nullable=False),
        sa.Column("end_line", sa.Integer(), nullable=False),
        _pk("blob_span", "blob_id", "parser_version", "ordinal"),
        _fk("blob_span", "span_id", "code_span"),
        _lines("blob_span"),
    )
    op.create_table(
        "span_occurrence",
        sa.Column("sha", sa.CHAR(40), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("ordinal", sa.Integer(), nullable=False),
        sa.Column("span_id", sa.CHAR(64), nullable=False),
        sa.Column("start_line", sa.Integer(), nullable=False),
        sa.Column("end_line", sa.Integer(), nullable=False),
        _pk("span_occurrence", "sha", "path", "ordinal"),
        _fk("span_occurrence", "sha", "commit_ref", cascade=True),
        _fk("span_occurrence", "span_id", "code_span"),
        _lines("span_occurrence"),
    )
    op.create_index("ix_span_occurrence_sha_span_id", "span_occurrence", ["sha", "span_id"])
    op.create_index("ix_span_occurrence_span_id", "span_occurrence", ["span_id"])


def _artifacts() -> None:
    op.create_table(
        "artifact",
        sa.Column("artifact_id", sa.CHAR(64), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("logical_key", sa.Text(), nullable=False),
        sa.Column("extractor_id", sa.Text(), nullable=False),
        sa.Column("extractor_version", sa.Text(), nullable=False),
        sa.Column("method", sa.Text(), nullable=False),
        sa.Column("confidence", sa.Double(), nullable=False),
        sa.Column("payload", JSONB(), nullable=False),
        sa.Column("prompt_version", sa.Text(), nullable=True),
        sa.Column("model_id", sa.Text(), nullable=True),
        sa.Column("embedding", VECTOR(384), nullable=True),
        sa.Column("embedding_model_id", sa.Text(), nullable=True),
        _pk("artifact", "artifact_id"),
        _hex("artifact", "artifact_id", 64),
        sa.CheckConstraint("confidence >= 0 AND confidence <= 1", name="ck_artifact_confidence"),
    )
    op.create_index("ix_artifact_kind_logical_key", "artifact", ["kind", "logical_key"])
    op.create_index(
        "ix_artifact_embedding",
        "artifact",
        ["embedding"],
        postgresql_using="hnsw",
        postgresql_ops={"embedding": "vector_cosine_ops"},
    )
    op.create_table(
        "artifact_derived_from",
        sa.Column("artifact_id", sa.CHAR(64), nullable=False),
        sa.Column("span_id", sa.CHAR(64), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("role", sa.Text(), nullable=False),
        _pk("artifact_derived_from", "artifact_id", "span_id", "path", "role"),
        _fk(
            "artifact_derived_from",
            "artifact_id",
            "artifact",
            cascade=True,
            deferred=True,
        ),
        _fk("artifact_derived_from", "span_id", "code_span"),
    )
    op.create_index("ix_artifact_derived_from_span_id", "artifact_derived_from", ["span_id"])
    op.execute(GROUNDED_CHECK_FUNCTION)
    for statement in GROUNDED_CHECK_TRIGGERS:
        op.execute(statement)


def _snapshots() -> None:
    op.create_table(
        "staged_entry",
        sa.Column("sha", sa.CHAR(40), nullable=False),
        sa.Column("extractor_id", sa.Text(), nullable=False),
        sa.Column("artifact_id", sa.CHAR(64), nullable=False),
        _pk("staged_entry", "sha", "extractor_id", "artifact_id"),
        _fk("staged_entry", "sha", "commit_ref", cascade=True),
        _fk("staged_entry", "artifact_id", "artifact"),
    )
    op.create_table(
        "snapshot_entry",
        sa.Column("sha", sa.CHAR(40), nullable=False),
        sa.Column("artifact_id", sa.CHAR(64), nullable=False),
        _pk("snapshot_entry", "sha", "artifact_id"),
        _fk("snapshot_entry", "sha", "commit_ref", cascade=True),
        _fk("snapshot_entry", "artifact_id", "artifact"),
    )
    op.create_index("ix_snapshot_entry_artifact_id", "snapshot_entry", ["artifact_id"])
    op.create_table(
        "gap",
        sa.Column("sha", sa.CHAR(40), nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("ordinal", sa.Integer(), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("line", sa.Integer(), nullable=True),
        _pk("gap", "sha", "source", "ordinal"),
        _fk("gap", "sha", "commit_ref", cascade=True),
    )


def _rag() -> None:
    op.create_table(
        "rag_chunk",
        sa.Column("chunk_id", sa.CHAR(64), nullable=False),
        sa.Column("blob_id", sa.CHAR(40), nullable=False),
        sa.Column("start_line", sa.Integer(), nullable=False),
        sa.Column("end_line", sa.Integer(), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("embedding", VECTOR(384), nullable=True),
        sa.Column("embedding_model_id", sa.Text(), nullable=True),
        _pk("rag_chunk", "chunk_id"),
        _hex("rag_chunk", "chunk_id", 64),
        _lines("rag_chunk"),
    )
    op.create_index("ix_rag_chunk_blob_id", "rag_chunk", ["blob_id"])
    op.create_index(
        "ix_rag_chunk_embedding",
        "rag_chunk",
        ["embedding"],
        postgresql_using="hnsw",
        postgresql_ops={"embedding": "vector_cosine_ops"},
    )


def upgrade() -> None:
    """Create the vector extension, every table and index, and the grounding trigger."""
    op.execute("CREATE EXTENSION IF NOT EXISTS vector")
    _commits()
    _spans()
    _artifacts()
    _snapshots()
    _rag()


def downgrade() -> None:
    """Drop everything 0001 created except the vector extension (other schemas may use it)."""
    for table in TABLES:
        op.drop_table(table)
    op.execute("DROP FUNCTION IF EXISTS artifact_grounded_check()")
