"""The thin Dagster resource that opens the configured language model for a model-backed asset.

It carries only what Dagster may show and serialize: provider, model and limits. API keys are
never part of it; the SDKs read them from their own environment variables when the client opens.
"""

from __future__ import annotations

import dataclasses
from typing import Any, get_args, get_type_hints

import dagster as dg

from kb_resources.llm.base import LlmConfig
from kb_resources.llm.client import LlmClient
from kb_resources.llm.factory import llm_config, open_llm
from kb_resources.settings import Settings

_OPTIONAL = frozenset(
    name for name, hint in get_type_hints(LlmConfig).items() if type(None) in get_args(hint)
)
"""``LlmConfig`` fields that may be unset (None); Dagster config holds them as empty strings."""


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
        """The resource configured from knowbase's settings (through ``llm_config``, the one
        mapping of settings to a model configuration)."""
        config = llm_config(settings)
        values: dict[str, Any] = {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}
        for name in _OPTIONAL:
            values[name] = values[name] or ""
        return cls(**values, github_api_url=settings.github_api_url)

    def config(self) -> LlmConfig:
        """This resource as the plain model configuration (an empty optional field is unset)."""
        values: dict[str, Any] = {f.name: getattr(self, f.name) for f in dataclasses.fields(LlmConfig)}
        for name in _OPTIONAL:
            values[name] = values[name] or None
        return LlmConfig(**values)

    def open(self) -> LlmClient:
        """A ready client (the provider's SDK is imported now; a missing SDK or key raises
        ``ProviderUnavailableError`` with one line saying what to set)."""
        return open_llm(self.config())
