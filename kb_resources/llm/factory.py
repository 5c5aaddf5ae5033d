"""Opening the configured model: ``KB_LLM_PROVIDER`` (``anthropic`` default, ``openai``, ``stub``).

SDKs are imported here, lazily, only when a model-backed pass opens a client: ``kb index`` never
imports them. A missing SDK or key is a ``ProviderUnavailableError`` naming what to set.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from kb_resources.llm.base import LlmConfig, Provider, ProviderUnavailableError
from kb_resources.llm.client import LlmClient
from kb_resources.llm.pricing import price_for
from kb_resources.settings import Settings

PROVIDERS = ("anthropic", "openai", "stub")


def llm_config(settings: Settings) -> LlmConfig:
    """The model configuration carried by ``settings``."""
    return LlmConfig(
        provider=settings.llm_provider,
        model=settings.llm_model,
        max_tokens=settings.llm_max_tokens,
        concurrency=settings.llm_concurrency,
        max_retries=settings.llm_max_retries,
        timeout_s=settings.llm_timeout_s,
        price=settings.llm_price,
        stub=settings.llm_stub,
    )


def open_provider(config: LlmConfig) -> Provider:
    """The provider adapter named by ``config`` (its SDK imported now)."""
    if config.provider == "anthropic":
        from kb_resources.llm.anthropic_provider import AnthropicProvider

        return AnthropicProvider(config.model, timeout_s=config.timeout_s)
    if config.provider == "openai":
        from kb_resources.llm.openai_provider import OpenAIProvider

        return OpenAIProvider(config.model, timeout_s=config.timeout_s)
    if config.provider == "stub":
        from kb_resources.llm.stub import StubConfig, StubProvider

        return StubProvider(config.model, StubConfig.parse(config.stub))
    raise ProviderUnavailableError(
        config.provider, f"unknown KB_LLM_PROVIDER; use one of {', '.join(PROVIDERS)}"
    )


def open_llm(config: LlmConfig, *, sleep: Callable[[float], None] = time.sleep) -> LlmClient:
    """A ready client: provider, concurrency limit, retries, price."""
    provider = open_provider(config)
    return LlmClient(
        provider,
        max_tokens=config.max_tokens,
        concurrency=config.concurrency,
        max_retries=config.max_retries,
        price=price_for(provider.model, config.price),
        sleep=sleep,
    )
