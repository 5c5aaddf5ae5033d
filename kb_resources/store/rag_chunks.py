"""Storage of the RAG baseline's source chunks (``rag_chunk``): per blob, with their vectors.

Chunks are content-addressed per (chunker version, blob, lines, model), so a blob that is already
chunked for a model is never chunked again, on any commit or path. A commit's chunks are the chunks
of its files' blobs (joined through ``commit_file``); nearest-chunk search is exact (a sequential
scan of the commit's chunks ordered by cosine distance), which is what a baseline should be.
Nothing here commits.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import NamedTuple

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY

from kb_resources.store.bulk import copy_new_rows
from kb_resources.store.embeddings import vector_text
from kb_resources.store.schema import commit_file, rag_chunk

_BLOBS = ARRAY(sa.CHAR(40))


class ChunkRow(NamedTuple):
    """One chunk to store."""

    chunk_id: str
    blob_id: str
    start_line: int
    end_line: int
    content: str
    vector: Sequence[float]


class ChunkHit(NamedTuple):
    """A chunk found by a search, placed at a path of the commit."""

    path: str
    start_line: int
    end_line: int
    distance: float
    content: str


def chunked_blobs(conn: sa.Connection, blob_ids: Collection[str], model_id: str) -> set[str]:
    """Which of ``blob_ids`` already have chunks embedded with ``model_id``."""
    if not blob_ids:
        return set()
    r = rag_chunk.c
    blobs = sa.cast(sa.bindparam("blobs", sorted(set(blob_ids)), type_=_BLOBS), _BLOBS)
    query = (
        sa.select(r.blob_id).distinct().where(r.blob_id == sa.any_(blobs), r.embedding_model_id == model_id)
    )
    return set(conn.scalars(query))


def insert_chunks(conn: sa.Connection, model_id: str, rows: Iterable[ChunkRow]) -> int:
    """Store chunks with their ``model_id`` vectors (existing ones are kept); return how many were new."""
    columns = ("chunk_id", "blob_id", "start_line", "end_line", "content", "embedding", "embedding_model_id")
    values = (
        (r.chunk_id, r.blob_id, r.start_line, r.end_line, r.content, vector_text(r.vector), model_id)
        for r in rows
    )
    return copy_new_rows(conn, "rag_chunk", columns, values, order_by=("chunk_id",))


def _of_commit(sha: str, model_id: str) -> list[sa.ColumnElement[bool]]:
    """WHERE clauses: chunks of the blobs of commit ``sha`` under ``model_id``."""
    return [
        commit_file.c.sha == sha,
        rag_chunk.c.blob_id == commit_file.c.blob_id,
        rag_chunk.c.embedding_model_id == model_id,
    ]


def commit_chunk_ids(conn: sa.Connection, sha: str, model_id: str) -> list[str]:
    """The ids of the chunks of commit ``sha`` under ``model_id``, sorted (its data version)."""
    query = sa.select(rag_chunk.c.chunk_id).distinct().where(*_of_commit(sha, model_id))
    return sorted(conn.scalars(query))


def nearest_chunks(
    conn: sa.Connection, sha: str, model_id: str, vector: Sequence[float], k: int
) -> list[ChunkHit]:
    """The ``k`` chunks of commit ``sha`` nearest to ``vector`` by cosine distance (ties by place)."""
    r, f = rag_chunk.c, commit_file.c
    distance = r.embedding.cosine_distance(list(vector))
    query = (
        sa.select(f.path, r.start_line, r.end_line, distance, r.content)
        .where(*_of_commit(sha, model_id))
        .order_by(distance, f.path, r.start_line)
        .limit(k)
    )
    return [
        ChunkHit(path, start, end, float(d), content) for path, start, end, d, content in conn.execute(query)
    ]
