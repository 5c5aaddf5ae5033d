"""Embedding storage for knowledge units: what still needs a vector, and writing vectors in bulk.

An artifact is content-addressed, so its vector under one model never changes: only artifacts of a
snapshot whose ``embedding_model_id`` is not the model's are read back for embedding, and vectors
are written with one ``UPDATE ... FROM`` a COPY'd temporary table per batch (rows locked in id
order first, so two writers of overlapping batches cannot deadlock). Nothing here commits. Used
by the pipeline only; the MCP server reads vectors through ``kb_resources.store.reads``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any, NamedTuple

import sqlalchemy as sa
from psycopg import sql

from kb_resources.store.bulk import _copy
from kb_resources.store.driver import driver_connection as _driver_connection
from kb_resources.store.hex_ids import stored_id
from kb_resources.store.schema import artifact, artifact_derived_from, code_span, snapshot_entry


class PendingUnit(NamedTuple):
    """An artifact of a snapshot that has no vector of the model yet, with its grounding names."""

    artifact_id: str
    kind: str
    logical_key: str
    payload: dict[str, Any]
    grounding: tuple[tuple[str, str, str], ...]
    """(path, fq_symbol_path, role) of each grounding edge."""


def _needs_model(model_id: str) -> sa.ColumnElement[bool]:
    """Artifacts without a vector of ``model_id``."""
    a = artifact.c
    return sa.or_(a.embedding.is_(None), a.embedding_model_id.is_distinct_from(model_id))


def snapshot_size(conn: sa.Connection, sha: str) -> int:
    """How many artifacts the snapshot of ``sha`` holds."""
    query = sa.select(sa.func.count()).select_from(snapshot_entry).where(snapshot_entry.c.sha == sha)
    return int(conn.scalar(query) or 0)


def pending_units(conn: sa.Connection, sha: str, model_id: str) -> list[PendingUnit]:
    """The snapshot's artifacts still lacking a ``model_id`` vector, by artifact id (two queries)."""
    a, s, d, c = artifact.c, snapshot_entry.c, artifact_derived_from.c, code_span.c
    names = (
        sa.select(d.artifact_id, d.path, c.fq_symbol_path, d.role)
        .select_from(snapshot_entry)
        .join(artifact, a.artifact_id == s.artifact_id)
        .join(artifact_derived_from, d.artifact_id == s.artifact_id)
        .join(code_span, c.span_id == d.span_id)
        .where(s.sha == sha, _needs_model(model_id))
    )
    grounding: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    for aid, path, fq, role in conn.execute(names).all():
        grounding[aid].append((path, fq, role))
    units = (
        sa.select(a.artifact_id, a.kind, a.logical_key, a.payload)
        .join(snapshot_entry, s.artifact_id == a.artifact_id)
        .where(s.sha == sha, _needs_model(model_id))
    )
    rows = sorted(conn.execute(units).all(), key=lambda r: r[0])
    return [
        PendingUnit(aid, kind, key, payload, tuple(sorted(grounding.get(aid, ()))))
        for aid, kind, key, payload in rows
    ]


def vector_text(vector: Sequence[float]) -> str:
    """pgvector's text form of a vector (what COPY sends)."""
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def write_unit_vectors(
    conn: sa.Connection, model_id: str, rows: Sequence[tuple[str, Sequence[float]]]
) -> int:
    """Store each (artifact_id, vector) under ``model_id``; return how many artifacts were updated."""
    if not rows:
        return 0
    raw = _driver_connection(conn)
    stage = sql.Identifier("_kb_stage_embedding")
    with raw.cursor() as cur:
        cur.execute(
            sql.SQL(
                "CREATE TEMP TABLE {} (artifact_id bytea PRIMARY KEY, embedding vector(384)) ON COMMIT DROP"
            ).format(stage)
        )
    _copy(raw, stage, ("artifact_id", "embedding"), ((stored_id(aid), vector_text(v)) for aid, v in rows))
    with raw.cursor() as cur:
        cur.execute(
            sql.SQL(
                "SELECT 1 FROM artifact WHERE artifact_id IN (SELECT artifact_id FROM {}) "
                "ORDER BY artifact_id FOR UPDATE"
            ).format(stage)
        )
        cur.execute(
            sql.SQL(
                "UPDATE artifact a SET embedding = s.embedding, embedding_model_id = %s "
                "FROM {} s WHERE a.artifact_id = s.artifact_id"
            ).format(stage),
            (model_id,),
        )
        updated = max(cur.rowcount, 0)
        cur.execute(sql.SQL("DROP TABLE {}").format(stage))
    return updated


def embedded_count(conn: sa.Connection, sha: str, model_id: str) -> int:
    """How many artifacts of the snapshot of ``sha`` have a ``model_id`` vector."""
    a, s = artifact.c, snapshot_entry.c
    query = (
        sa.select(sa.func.count())
        .select_from(snapshot_entry)
        .join(artifact, a.artifact_id == s.artifact_id)
        .where(s.sha == sha, a.embedding_model_id == model_id, a.embedding.is_not(None))
    )
    return int(conn.scalar(query) or 0)
