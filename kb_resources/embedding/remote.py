"""The optional OpenAI embedder (``KB_EMBED_PROVIDER=openai``).

``text-embedding-3-*`` models accept a ``dimensions`` parameter that shortens their vectors (the
API returns them re-normalized), so they are asked for 384 dimensions and fit the store's
``vector(384)`` columns; ``KB_EMBED_MODEL`` picks the model (default ``text-embedding-3-small``),
``OPENAI_API_KEY`` / ``OPENAI_BASE_URL`` (or ``KB_EMBED_API_KEY`` / ``KB_EMBED_BASE_URL``) the account
and endpoint. The SDK (``pip install openai``, also in the ``llm`` extra) is imported on first use.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Sequence
from typing import Any

from kb_resources.embedding.port import STORE_DIM, EmbedderUnavailableError

DEFAULT_MODEL = "text-embedding-3-small"
MAX_INPUTS = 256
"""Texts per request at most (the API takes up to 2048; smaller requests retry cheaper)."""
DEFAULT_BATCH_SIZE = 64
"""Texts per request unless ``KB_EMBED_BATCH`` says otherwise."""


class OpenAIEmbedder:
    """OpenAI embeddings shortened to the store's width."""

    def __init__(
        self,
        model: str | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
    ) -> None:
        self.model = model or DEFAULT_MODEL
        self._api_key, self._base_url = api_key, base_url
        self.batch_size = min(batch_size, MAX_INPUTS) if batch_size > 0 else DEFAULT_BATCH_SIZE
        self._client: Any = None
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        """``openai/<model>@384``: the width is part of the identity (other widths are other vectors)."""
        return f"openai/{self.model}@{STORE_DIM}"

    @property
    def dim(self) -> int:
        """384, requested through the ``dimensions`` parameter."""
        return STORE_DIM

    def _open(self) -> Any:
        """The SDK client (created once; ``EmbedderUnavailableError`` without the SDK or a key)."""
        with self._lock:
            if self._client is None:
                if not self._api_key:
                    raise EmbedderUnavailableError("openai", "set OPENAI_API_KEY (or KB_EMBED_API_KEY)")
                try:
                    sdk = importlib.import_module("openai")
                except ImportError:
                    raise EmbedderUnavailableError(
                        "openai", "the SDK is missing: pip install openai"
                    ) from None
                self._client = sdk.OpenAI(api_key=self._api_key, base_url=self._base_url)
            return self._client

    def load(self) -> None:
        """Create the SDK client (fails early without the SDK or a key)."""
        self._open()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors for ``texts``, requested ``batch_size`` texts at a time, in input order."""
        if not texts:
            return []
        client = self._open()
        out: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = [t or " " for t in texts[start : start + self.batch_size]]  # the API refuses ""
            reply = client.embeddings.create(model=self.model, input=batch, dimensions=STORE_DIM)
            rows = sorted(reply.data, key=lambda d: d.index)
            out.extend([float(x) for x in row.embedding] for row in rows)
        return out
