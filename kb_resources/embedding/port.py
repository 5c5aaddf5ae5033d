"""The embedding port: what every embedding provider offers, and how one is chosen from settings.

Providers are replaceable adapters (ARCHITECTURE.md): the pipeline and the MCP server only see an
``Embedder`` — a model id (stored with every vector, so a query is only ever compared with vectors
of the same model), a dimension (the store's columns are ``vector(384)``) and ``embed``. Building
an embedder is cheap: no provider imports its heavy library (torch, the OpenAI SDK) before the
first ``embed`` call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from kb_assets.core.errors import BadInputError

if TYPE_CHECKING:
    from kb_resources.settings import Settings

STORE_DIM = 384
"""Width of the store's embedding columns (``artifact.embedding``, ``rag_chunk.embedding``)."""

PROVIDERS = ("local", "openai", "hash")


class Embedder(Protocol):
    """Turns texts into unit-length vectors of one model."""

    @property
    def model_id(self) -> str:
        """The model's stable name, stored as ``embedding_model_id`` next to every vector."""
        ...

    @property
    def dim(self) -> int:
        """Length of every vector this embedder returns."""
        ...

    def load(self) -> None:
        """Load the model or open the client now (so that a caller can time embedding apart from
        start-up); ``embed`` does it on first use anyway."""
        ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order."""
        ...


class EmbedderUnavailableError(BadInputError):
    """The configured embedding provider cannot run here (missing extra, key or bad setting)."""

    def __init__(self, provider: str, reason: str) -> None:
        super().__init__(f"embedding provider {provider!r} is unavailable: {reason}")
        self.provider = provider
        self.reason = reason


def make_embedder(settings: Settings) -> Embedder:
    """The embedder ``settings`` select (``KB_EMBED_PROVIDER``: local, openai or hash); nothing heavy
    is imported until it embeds."""
    provider = settings.embed_provider
    if provider == "local":
        from kb_resources.embedding.local import LocalEmbedder

        return LocalEmbedder(batch_size=settings.embed_batch_size)
    if provider == "openai":
        from kb_resources.embedding.remote import OpenAIEmbedder

        return OpenAIEmbedder(
            model=settings.embed_model or None,
            api_key=settings.embed_api_key,
            base_url=settings.embed_base_url,
            batch_size=settings.embed_batch_size,
        )
    if provider == "hash":
        from kb_resources.embedding.hashing import HashEmbedder

        return HashEmbedder()
    raise EmbedderUnavailableError(provider, f"KB_EMBED_PROVIDER must be one of {', '.join(PROVIDERS)}")


def embedder_for_model(model_id: str, settings: Settings) -> Embedder | None:
    """An embedder that produces vectors of the stored model ``model_id`` (None when this program
    knows no such model): a query must be embedded by the model its candidates were embedded with,
    whatever ``KB_EMBED_PROVIDER`` says now."""
    from kb_resources.embedding import hashing, local

    model_id = model_id.split("#", 1)[0]  # a stored id names the text rule after '#'
    if model_id == local.MODEL_ID:
        return local.LocalEmbedder(batch_size=settings.embed_batch_size)
    if model_id == hashing.MODEL_ID:
        return hashing.HashEmbedder()
    prefix, suffix = "openai/", f"@{STORE_DIM}"
    if model_id.startswith(prefix) and model_id.endswith(suffix):
        from kb_resources.embedding.remote import OpenAIEmbedder

        name = model_id[len(prefix) : -len(suffix)]
        return OpenAIEmbedder(model=name, api_key=settings.embed_api_key, base_url=settings.embed_base_url)
    return None


def configured_model_id(settings: Settings) -> str:
    """The model id ``settings`` select, without loading anything; a placeholder naming the provider
    when it is misconfigured (so that only ``kb embed`` fails on it, not the Definitions)."""
    try:
        return make_embedder(settings).model_id
    except EmbedderUnavailableError:
        return f"unavailable:{settings.embed_provider}"


def check_dim(embedder: Embedder, vectors: Sequence[Sequence[float]]) -> None:
    """Refuse vectors that would not fit the store's columns (a provider misconfiguration)."""
    for vector in vectors:
        if len(vector) != STORE_DIM:
            raise EmbedderUnavailableError(
                embedder.model_id, f"it returned {len(vector)}-d vectors; the store holds {STORE_DIM}-d ones"
            )
