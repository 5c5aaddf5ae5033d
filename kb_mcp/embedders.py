"""Query embedders for semantic search, one per stored model, made on the first search that needs one.

A query must be embedded by the model its candidates were embedded with, so the embedder is chosen
by the ``embedding_model_id`` stored with the snapshot's vectors (``kb embed`` decides it), not by
what this server's settings would pick. Making one imports nothing heavy: the local model (and
torch under it) is loaded by its first ``embed``, on a worker thread of the first semantic search,
never at server start and never for the other tools.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kb_mcp.context import QueryEmbedder
    from kb_resources.embedding.port import Embedder
    from kb_resources.settings import Settings


class QueryEmbedders:
    """Model id -> query embedder (None for a model this program cannot run), cached per process."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._made: dict[str, Embedder | None] = {}
        self._lock = threading.Lock()

    def __call__(self, model_id: str) -> QueryEmbedder | None:
        """The embedder of ``model_id`` as a query -> vector function, or None."""
        from kb_resources.embedding.port import embedder_for_model

        with self._lock:
            if model_id not in self._made:
                self._made[model_id] = embedder_for_model(model_id, self._settings)
            embedder = self._made[model_id]
        if embedder is None:
            return None
        model = embedder

        def embed_query(query: str) -> Sequence[float]:
            return model.embed([query])[0]

        return embed_query
