"""The RAG baseline's chunks of a commit: chunk and embed every Python blob not yet chunked.

Blobs are read from git (no checkout), chunked by ``kb_assets.core.chunks`` and embedded in
batches; all chunks of a blob are written in the same transaction, so a blob counts as chunked
only once all of its chunks are stored, and an interrupted run resumes at the next blob.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

from sqlalchemy import Engine

from kb_assets.core.chunks import Chunk, chunk_id, chunk_source
from kb_assets.core.models import READABLE_MODES
from kb_assets.indexing.embed import WRITE_BATCH, EmbedStats
from kb_assets.indexing.progress import report
from kb_resources.embedding.port import Embedder, check_dim
from kb_resources.git.repo import GitRepo
from kb_resources.store import reads
from kb_resources.store.rag_chunks import ChunkRow, chunked_blobs, commit_chunk_ids, insert_chunks


@dataclass(frozen=True, slots=True)
class RagStats:
    """What chunking a commit did: files and blobs seen, blobs chunked now, and the chunk vectors."""

    files: int
    blobs: int
    chunked: int
    chunks: EmbedStats

    @property
    def reused(self) -> int:
        """Blobs whose chunks were already stored."""
        return self.blobs - self.chunked

    def metadata(self) -> dict[str, str | int | float]:
        """The stats as Dagster metadata."""
        chunks = {f"chunks_{k}": v for k, v in self.chunks.metadata().items() if k != "model_id"}
        return {
            "model_id": self.chunks.model_id,
            "files": self.files,
            "blobs": self.blobs,
            "chunked_blobs": self.chunked,
            "reused_blobs": self.reused,
            **chunks,
        }


SOURCE_SUFFIXES = (".py", ".pyi")
"""The files the baseline chunks: the ones tree-sitter-python can cut at definitions."""


def _flush(engine: Engine, embedder: Embedder, pending: list[tuple[str, Chunk]]) -> tuple[int, float]:
    """Embed and store ``pending`` chunks in one transaction; (how many were new, model seconds)."""
    if not pending:
        return 0, 0.0
    began = time.perf_counter()
    vectors = embedder.embed([c.content for _, c in pending])
    seconds = time.perf_counter() - began
    check_dim(embedder, vectors)
    model = embedder.model_id
    rows = [
        ChunkRow(
            chunk_id(blob, c.start_line, c.end_line, model), blob, c.start_line, c.end_line, c.content, v
        )
        for (blob, c), v in zip(pending, vectors, strict=True)
    ]
    with engine.begin() as conn:
        return insert_chunks(conn, model, rows), seconds


def chunk_commit(
    repo: GitRepo, engine: Engine, sha: str, embedder: Embedder, *, max_bytes: int, batch: int = WRITE_BATCH
) -> RagStats:
    """Chunk and embed the Python blobs of commit ``sha`` that no earlier run chunked for this model.

    A blob without any chunk (an empty ``__init__.py``) leaves no row, so it is read again by the
    next run — cheap, and it never reaches the model."""
    model = embedder.model_id
    with engine.connect() as conn:
        files = [
            f
            for f in reads.commit_files(conn, sha)
            if f.mode in READABLE_MODES and f.size <= max_bytes and f.path.endswith(SOURCE_SUFFIXES)
        ]
        blobs = sorted({f.blob_id for f in files})
        done_before = chunked_blobs(conn, blobs, model)
    todo = [b for b in blobs if b not in done_before]
    embedded, seconds, loaded = 0, 0.0, False
    pending: list[tuple[str, Chunk]] = []
    report("chunking files", 0, len(todo))
    for done, blob in enumerate(todo, start=1):
        pending.extend((blob, c) for c in chunk_source(repo.read_blob(blob)))
        if len(pending) >= batch or done == len(todo):
            if pending and not loaded:
                embedder.load()
                loaded = True
            new, spent = _flush(engine, embedder, pending)
            embedded, seconds, pending = embedded + new, seconds + spent, []
            report("chunking files", done, len(todo))
    with engine.connect() as conn:
        total = len(commit_chunk_ids(conn, sha, model))
    return RagStats(len(files), len(blobs), len(todo), EmbedStats(model, total, embedded, seconds))


def chunks_version(engine: Engine, sha: str, model_id: str) -> str:
    """The data version of a commit's chunks: their ids (which name the model)."""
    with engine.connect() as conn:
        ids = commit_chunk_ids(conn, sha, model_id)
    return hashlib.sha256("".join(ids).encode()).hexdigest()
