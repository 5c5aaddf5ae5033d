"""How many texts an embedder takes at once: ``KB_EMBED_BATCH``, else the provider's own default
(the local model's memory grows with its batch; a remote API's requests should not be tiny)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kb_resources.embedding import local, remote
from kb_resources.embedding.local import LocalEmbedder
from kb_resources.embedding.port import make_embedder
from kb_resources.embedding.remote import OpenAIEmbedder
from kb_resources.resources import KnowbaseResource
from kb_resources.settings import Settings, load_settings


def _batch(settings: Settings, tmp_path: Path) -> tuple[int, int]:
    """The batch of the embedder ``settings`` make, directly and through the Dagster resource."""
    direct = make_embedder(settings)
    resource = make_embedder(KnowbaseResource.from_settings(settings, repo=str(tmp_path)).settings())
    assert isinstance(direct, LocalEmbedder | OpenAIEmbedder)
    assert isinstance(resource, type(direct))
    return direct.batch_size, resource.batch_size


@pytest.mark.parametrize(
    ("provider", "default", "largest"),
    [("local", local.DEFAULT_BATCH_SIZE, 5000), ("openai", remote.DEFAULT_BATCH_SIZE, remote.MAX_INPUTS)],
)
def test_each_provider_has_its_own_batch_unless_one_is_set(
    tmp_path: Path, provider: str, default: int, largest: int
) -> None:
    """Unset, each provider batches its own way (16 texts a forward pass, 64 a request); a set
    ``KB_EMBED_BATCH`` holds for both, within the API's limit, also through the Dagster resource."""

    def batch(**env: str) -> tuple[int, int]:
        return _batch(
            load_settings({"KB_HOME": str(tmp_path), "KB_EMBED_PROVIDER": provider, **env}), tmp_path
        )

    assert batch() == (default, default)
    assert batch(KB_EMBED_BATCH="40") == (40, 40)
    assert batch(KB_EMBED_BATCH="5000") == (largest, largest)
    assert local.DEFAULT_BATCH_SIZE == 16  # the batch measured to halve the peak (local.py)
