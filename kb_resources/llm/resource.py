"""The thin Dagster resource that opens the configured language model for a model-backed asset.

It carries only what Dagster may show and serialize: provider, model and limits. API keys are
never part of it; the SDKs read them from their own environment variables when the client opens.
"""

from __future__ import annotations

import dagster as dg

from kb_resources.llm.base import LlmConfig
from kb_resources.llm.client import LlmClient
from kb_resources.llm.factory import open_llm
from kb_resources.settings import Settings


class LlmResource(dg.ConfigurableResource["LlmResource"]):
    """Which model the ``descriptions`` and ``decisions`` assets ask, and how (no keys, ever)."""

    provider: str = "anthropic"
    model: str = ""
    max_tokens: int = 1024
    concurrency: int = 4
    max_retries: int = 5
    timeout_s: float = 120.0
    price: str = ""
    stub: str = ""
    github_api_url: str = "https://api.github.com"

    @classmethod
    def from_settings(cls, settings: Settings) -> LlmResource:
        """The resource configured from knowbase's settings."""
        return cls(
            provider=settings.llm_provider,
            model=settings.llm_model or "",
            max_tokens=settings.llm_max_tokens,
            concurrency=settings.llm_concurrency,
            max_retries=settings.llm_max_retries,
            timeout_s=settings.llm_timeout_s,
            price=settings.llm_price or "",
            stub=settings.llm_stub,
            github_api_url=settings.github_api_url,
        )

    def config(self) -> LlmConfig:
        """This resource as the plain model configuration."""
        return LlmConfig(
            provider=self.provider,
            model=self.model or None,
            max_tokens=self.max_tokens,
            concurrency=self.concurrency,
            max_retries=self.max_retries,
            timeout_s=self.timeout_s,
            price=self.price or None,
            stub=self.stub,
        )

    def open(self) -> LlmClient:
        """A ready client (the provider's SDK is imported now; a missing SDK or key raises
        ``ProviderUnavailableError`` with one line saying what to set)."""
        return open_llm(self.config())
