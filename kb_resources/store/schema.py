"""The knowledge store's tables, as SQLAlchemy Core metadata.

This module mirrors what the Alembic migrations build: ``alembic check`` (and the test that runs its
comparison in code) fails when the two drift apart. Migrations stay hand-written; this metadata is
what queries are written against and what the autogenerate comparison reads. The naming convention
gives every constraint and index a deterministic name, so migrations can refer to them.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from pgvector.sqlalchemy import VECTOR
from sqlalchemy.dialects.postgresql import ARRAY, JSONB

from kb_resources.store.hex_ids import ID_BYTES, HexId

EMBEDDING_DIM = 384
"""Width of every embedding column (all-MiniLM-L6-v2)."""

NAMING_CONVENTION = {
    "pk": "pk_%(table_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
}

metadata = sa.MetaData(naming_convention=NAMING_CONVENTION)

_SHA = sa.CHAR(40)
_ID = HexId()
"""A sha256 id: its 32 bytes in the store, its 64 hex digits in Python (``hex_ids``)."""
_TSTZ = sa.TIMESTAMP(timezone=True)


def _hex(column: str, width: int, name: str | None = None) -> sa.CheckConstraint:
    """A CHECK that ``column`` holds ``width`` lowercase hex digits (NULL passes); no bounded
    repetition, which costs the regex engine ten times more per row (migration 0005)."""
    return sa.CheckConstraint(
        f"length({column}) = {width} AND {column} !~ '[^0-9a-f]'", name=name or f"{column}_hex"
    )


def _digest(column: str) -> sa.CheckConstraint:
    """A CHECK that ``column`` holds a whole digest (NULL passes): what the hex check of a
    64-character id was before ids were stored as bytes (migration 0010)."""
    return sa.CheckConstraint(f"octet_length({column}) = {ID_BYTES}", name=f"{column}_length")


def _lines() -> sa.CheckConstraint:
    """A CHECK that a line range is 1-based and ordered."""
    return sa.CheckConstraint("start_line >= 1 AND end_line >= start_line", name="lines")


def _commit_fk() -> sa.ForeignKey:
    """A reference to a commit whose rows go away with the commit."""
    return sa.ForeignKey("commit_ref.sha", ondelete="CASCADE")


commit_ref = sa.Table(
    "commit_ref",
    metadata,
    sa.Column("sha", _SHA, primary_key=True),
    sa.Column("tree_id", _SHA, nullable=False),
    sa.Column("parents", ARRAY(sa.Text()), nullable=False),
    sa.Column("committed_at", _TSTZ, nullable=False),
    sa.Column("mode", sa.Text(), nullable=True),
    sa.Column("base_sha", _SHA, nullable=True),
    sa.Column("published_at", _TSTZ, nullable=True),
    sa.Column("stats", JSONB(), nullable=False, server_default=sa.text("'{}'::jsonb")),
    sa.Column("parser_version", sa.Text(), nullable=True),
    _hex("sha", 40),
    _hex("tree_id", 40),
    _hex("base_sha", 40),
    sa.CheckConstraint("mode IN ('full', 'incremental')", name="mode"),
)

branch_ref = sa.Table(
    "branch_ref",
    metadata,
    sa.Column("name", sa.Text(), primary_key=True),
    sa.Column("sha", _SHA, nullable=False),
    sa.Column("updated_at", _TSTZ, nullable=False),
    _hex("sha", 40),
)

commit_file = sa.Table(
    "commit_file",
    metadata,
    sa.Column("sha", _SHA, _commit_fk(), primary_key=True),
    sa.Column("path", sa.Text(), primary_key=True),
    sa.Column("blob_id", _SHA, nullable=False),
    sa.Column("mode", sa.Text(), nullable=False),
    sa.Column("size", sa.BigInteger(), nullable=False),
    sa.Column("module", sa.Text(), nullable=True),
    sa.Column("is_package", sa.Boolean(), nullable=False, server_default=sa.false()),
    _hex("blob_id", 40),
    sa.Index(None, "blob_id"),
)

parsed_blob = sa.Table(
    "parsed_blob",
    metadata,
    sa.Column("blob_id", _SHA, primary_key=True),
    sa.Column("parser_version", sa.Text(), primary_key=True),
    sa.Column("line_count", sa.Integer(), nullable=False),
    sa.Column("facts", sa.LargeBinary(), nullable=False),
    sa.Column("gaps", JSONB(), nullable=False, server_default=sa.text("'[]'::jsonb")),
    _hex("blob_id", 40),
)

code_span = sa.Table(
    "code_span",
    metadata,
    sa.Column("span_id", _ID, primary_key=True),
    sa.Column("lang", sa.Text(), nullable=False),
    sa.Column("kind", sa.Text(), nullable=False),
    sa.Column("fq_symbol_path", sa.Text(), nullable=False),
    _digest("span_id"),
)

blob_span = sa.Table(
    "blob_span",
    metadata,
    sa.Column("blob_id", _SHA, primary_key=True),
    sa.Column("parser_version", sa.Text(), primary_key=True),
    sa.Column("ordinal", sa.Integer(), primary_key=True),
    sa.Column("span_id", _ID, nullable=False),  # -> code_span, see STATEMENT_REFERENCES
    sa.Column("start_line", sa.Integer(), nullable=False),
    sa.Column("end_line", sa.Integer(), nullable=False),
    _lines(),
    sa.Index(None, "span_id"),
)

artifact = sa.Table(
    "artifact",
    metadata,
    sa.Column("artifact_id", _ID, primary_key=True),
    sa.Column("kind", sa.Text(), nullable=False),
    sa.Column("logical_key", sa.Text(), nullable=False),
    sa.Column("extractor_id", sa.Text(), nullable=False),
    sa.Column("extractor_version", sa.Text(), nullable=False),
    sa.Column("method", sa.Text(), nullable=False),
    sa.Column("confidence", sa.Double(), nullable=False),
    sa.Column("payload", JSONB(), nullable=False),
    sa.Column("prompt_version", sa.Text(), nullable=True),
    sa.Column("model_id", sa.Text(), nullable=True),
    sa.Column("embedding", VECTOR(EMBEDDING_DIM), nullable=True),
    sa.Column("embedding_model_id", sa.Text(), nullable=True),
    _digest("artifact_id"),
    sa.CheckConstraint("confidence >= 0 AND confidence <= 1", name="confidence"),
    # Equal keys only are ever asked for (a key names its kind), and a hash index takes an insert
    # for half what a B-tree on the ~117-character keys did (migration 0008).
    sa.Index(None, "logical_key", postgresql_using="hash"),
    sa.Index(
        None,
        "embedding",
        postgresql_using="hnsw",
        postgresql_ops={"embedding": "vector_cosine_ops"},
    ),
)

ARTIFACT_RECORD_COLUMNS = (
    "artifact_id",
    "kind",
    "logical_key",
    "extractor_id",
    "extractor_version",
    "method",
    "confidence",
    "payload",
    "prompt_version",
    "model_id",
)
"""An artifact's record (everything but its embedding), in the order writes send it and reads
select it."""

artifact_derived_from = sa.Table(
    "artifact_derived_from",
    metadata,
    sa.Column("artifact_id", _ID, nullable=False),  # -> artifact (cascade), see STATEMENT_REFERENCES
    sa.Column("span_id", _ID, nullable=False),  # -> code_span
    sa.Column("path", sa.Text(), nullable=False),
    sa.Column("role", sa.Text(), nullable=False),
    sa.Index(None, "artifact_id"),
    sa.Index(None, "span_id"),
)
"""An artifact's grounding edges, one row each. No key: a four-column one cost ~1 s of the
server's CPU in a full Django index (migration 0009); its writer (``writes.insert_artifacts``)
stores an artifact's distinct rows once, with the artifact."""

artifact_grounding_due = sa.Table(
    "artifact_grounding_due",
    metadata,
    sa.Column("due", sa.BigInteger(), sa.Identity(always=True), primary_key=True),
    sa.Column("ids", ARRAY(sa.CHAR(64)), nullable=False),
)
"""The artifact ids each statement of an open transaction inserted, one row per statement, until
COMMIT checks them together and deletes the row (the deferred ``artifact_grounded_check``,
migration 0008): empty outside a transaction. Nothing but the triggers writes it, in hex (a table
with pending deferred events cannot change type, so migration 0010 left it as it was)."""

entry_set = sa.Table(
    "entry_set",
    metadata,
    sa.Column("set_id", _ID, primary_key=True),
    sa.Column("size", sa.Integer(), nullable=False),
    sa.CheckConstraint("size >= 1", name="size"),
)
"""A content-addressed set of artifact ids (``entry_sets``): the unit commits share their entries by."""

entry_set_member = sa.Table(
    "entry_set_member",
    metadata,
    sa.Column("set_id", _ID, primary_key=True),  # -> entry_set (cascade), see STATEMENT_REFERENCES
    sa.Column("artifact_id", _ID, primary_key=True),  # -> artifact
    sa.Index(None, "artifact_id"),
)


def _part(name: str) -> sa.Table:
    """A commit's entries for one extractor and id prefix: which set holds them."""
    return sa.Table(
        name,
        metadata,
        sa.Column("sha", _SHA, _commit_fk(), primary_key=True),
        sa.Column("extractor_id", sa.Text(), primary_key=True),
        sa.Column("prefix", sa.Text(), primary_key=True),
        sa.Column("set_id", _ID, sa.ForeignKey("entry_set.set_id"), nullable=False),
        sa.Index(None, "set_id"),
    )


staged_part = _part("staged_part")
"""What each extractor proposes for a commit's snapshot, written by its asset."""

snapshot_part = _part("snapshot_part")
"""A commit's published snapshot: its staged parts, copied in the publishing transaction."""

gap = sa.Table(
    "gap",
    metadata,
    sa.Column("sha", _SHA, _commit_fk(), primary_key=True),
    sa.Column("source", sa.Text(), primary_key=True),
    sa.Column("ordinal", sa.Integer(), primary_key=True),
    sa.Column("path", sa.Text(), nullable=False),
    sa.Column("reason", sa.Text(), nullable=False),
    sa.Column("detail", sa.Text(), nullable=False),
    sa.Column("line", sa.Integer(), nullable=True),
)

rag_chunk = sa.Table(
    "rag_chunk",
    metadata,
    sa.Column("chunk_id", _ID, primary_key=True),
    sa.Column("blob_id", _SHA, nullable=False),
    sa.Column("start_line", sa.Integer(), nullable=False),
    sa.Column("end_line", sa.Integer(), nullable=False),
    sa.Column("content", sa.Text(), nullable=False),
    sa.Column("embedding", VECTOR(EMBEDDING_DIM), nullable=True),
    sa.Column("embedding_model_id", sa.Text(), nullable=True),
    _digest("chunk_id"),
    _lines(),
    sa.Index(None, "blob_id"),
    sa.Index(
        None,
        "embedding",
        postgresql_using="hnsw",
        postgresql_ops={"embedding": "vector_cosine_ops"},
    ),
)


@dataclass(frozen=True, slots=True)
class StatementReference:
    """``child.column`` refers to ``parent.column``, checked per statement (migration 0003)."""

    child: str
    column: str
    parent: str
    cascade: bool = False
    """Deleting the parent row deletes the child rows; otherwise the delete is refused."""

    @property
    def name(self) -> str:
        """The constraint name a violation reports (that of the foreign key it replaced)."""
        return f"fk_{self.child}_{self.column}_{self.parent}"


STATEMENT_REFERENCES: tuple[StatementReference, ...] = (
    StatementReference("entry_set_member", "set_id", "entry_set", cascade=True),
    StatementReference("entry_set_member", "artifact_id", "artifact"),
    StatementReference("artifact_derived_from", "artifact_id", "artifact", cascade=True),
    StatementReference("artifact_derived_from", "span_id", "code_span"),
    StatementReference("blob_span", "span_id", "code_span"),
)
"""The references of the largest tables. They are not foreign keys: a foreign key probes the parent
once per row (320k grounding rows for Django, and before migration 0006 88k staged and 88k snapshot
entries per commit; now as many set members on a full index), and those probes were most of the
server's time. Statement-level triggers check a statement's rows with
one join and raise ``foreign_key_violation`` under ``name``; a delete of a parent first locks the
child tables against concurrent writers (migration 0003 says why that is enough). The metadata
above declares no ``ForeignKey`` for them, so joins are written with an explicit ON clause."""


views = sa.MetaData()
"""Views of the schema (created by migrations, never compared by autogenerate)."""

span_occurrence = sa.Table(
    "span_occurrence",
    views,
    sa.Column("sha", _SHA),
    sa.Column("path", sa.Text()),
    sa.Column("ordinal", sa.Integer()),
    sa.Column("span_id", _ID),
    sa.Column("start_line", sa.Integer()),
    sa.Column("end_line", sa.Integer()),
)
"""Where each span sits at each *published* commit: ``commit_file`` joined with the ``blob_span``
rows of the commit's ``parser_version``. Occurrences are derived, never copied, so a commit that
changes one file costs one file's rows, not the whole repository's."""


def _entries(name: str) -> sa.Table:
    """A view of a part table expanded through its sets: one row per commit, extractor and id."""
    return sa.Table(
        name,
        views,
        sa.Column("sha", _SHA),
        sa.Column("extractor_id", sa.Text()),
        sa.Column("artifact_id", _ID),
    )


staged_entry = _entries("staged_entry")
"""Each extractor's staged artifact ids per commit: ``staged_part`` expanded through its sets
(``entry_sets`` says why entries are stored as shared sets). Read-only; writes go through
``writes.replace_staged``."""

snapshot_entry = _entries("snapshot_entry")
"""The artifact ids of each commit's published snapshot: ``snapshot_part`` expanded through its
sets. Read-only; writes go through ``writes.publish_snapshot`` and ``writes.publish_entries``."""


def occurrences(parser_version: str | None = None) -> sa.FromClause:
    """Span occurrences located with ``parser_version`` (the pipeline's, before publishing), or,
    with None, the ``span_occurrence`` view of published commits."""
    if parser_version is None:
        return span_occurrence
    f, b = commit_file.c, blob_span.c
    located = sa.select(f.sha, f.path, b.ordinal, b.span_id, b.start_line, b.end_line).join(
        blob_span, sa.and_(b.blob_id == f.blob_id, b.parser_version == parser_version)
    )
    return located.subquery("span_occurrence")
