"""Embed a published snapshot's knowledge units: only artifacts that have no vector of the model yet.

Artifacts are content-addressed and their text is a function of their id
(``kb_assets.core.embedding_text``), so an artifact embedded once under a model is never embedded
again, on any commit: a new commit costs exactly its new artifact ids. Vectors are written and
committed batch by batch, so an interrupted run keeps what it finished and the next one resumes.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Engine

from kb_assets.core.embedding_text import GroundingName, unit_text, vector_model_id
from kb_assets.indexing.extract import ids_digest
from kb_assets.indexing.progress import report
from kb_resources.embedding.port import Embedder, check_dim
from kb_resources.store import reads
from kb_resources.store.embeddings import PendingUnit, pending_units, snapshot_size, write_unit_vectors

WRITE_BATCH = 512
"""Texts embedded and committed together (the model batches inside; larger calls pad less)."""


@dataclass(frozen=True, slots=True)
class EmbedStats:
    """What one embedding pass over a snapshot or a commit's chunks did."""

    model_id: str
    total: int
    """Texts the snapshot (or commit) has: embedded now plus reused."""
    embedded: int
    seconds: float
    """Time spent in the model (loading and store writes excluded)."""

    @property
    def reused(self) -> int:
        """Texts that already had a vector of the model."""
        return self.total - self.embedded

    @property
    def texts_per_s(self) -> float:
        """Embedding throughput of this pass (0 when nothing was embedded)."""
        return self.embedded / self.seconds if self.embedded and self.seconds > 0 else 0.0

    def metadata(self) -> dict[str, str | int | float]:
        """The stats as Dagster metadata."""
        return {
            "model_id": self.model_id,
            "total": self.total,
            "embedded": self.embedded,
            "reused": self.reused,
            "seconds": round(self.seconds, 3),
            "texts_per_s": round(self.texts_per_s, 1),
        }


def texts_of(units: Sequence[PendingUnit]) -> list[str]:
    """The embedding text of each pending unit."""
    return [
        unit_text(u.kind, u.logical_key, u.payload, (GroundingName(*g) for g in u.grounding)) for u in units
    ]


def embed_snapshot(engine: Engine, sha: str, embedder: Embedder, *, batch: int = WRITE_BATCH) -> EmbedStats:
    """Give every artifact of the published snapshot of ``sha`` a vector of ``embedder``'s model.

    The model is loaded before the clock starts (when there is anything to embed), so ``seconds``
    and the throughput are the embedding's own, comparable with the model's raw rate."""
    model = vector_model_id(embedder.model_id)
    with engine.connect() as conn:
        total = snapshot_size(conn, sha)
        pending = pending_units(conn, sha, model)
    if not pending:
        return EmbedStats(model, total, 0, 0.0)
    texts = texts_of(pending)
    # Shortest first, so that each batch pads little: the model sorts by length only inside a call.
    order = sorted(range(len(pending)), key=lambda i: (len(texts[i]), pending[i].artifact_id))
    pending, texts = [pending[i] for i in order], [texts[i] for i in order]
    embedder.load()
    seconds = 0.0
    report("embedding units", 0, len(pending))
    for start in range(0, len(pending), batch):
        began = time.perf_counter()
        vectors = embedder.embed(texts[start : start + batch])
        seconds += time.perf_counter() - began
        check_dim(embedder, vectors)
        ids = [u.artifact_id for u in pending[start : start + batch]]
        with engine.begin() as conn:
            write_unit_vectors(conn, model, list(zip(ids, vectors, strict=True)))
        report("embedding units", min(start + batch, len(pending)), len(pending))
    return EmbedStats(model, total, len(pending), seconds)


def snapshot_embedding_version(engine: Engine, sha: str, model_id: str) -> str:
    """The data version of a snapshot's embeddings: its artifact ids under one model."""
    with engine.connect() as conn:
        ids = reads.snapshot_artifact_ids(conn, sha)
    return hashlib.sha256(f"{model_id}\0{ids_digest(ids)}".encode()).hexdigest()
