"""The real Anthropic and OpenAI SDK adapters against local servers speaking their wire protocols.

No network and no mock of the SDKs: ``ANTHROPIC_BASE_URL`` / ``OPENAI_BASE_URL`` point the
official clients at an in-process HTTP server on loopback (``tests/llmservers.py``).
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from kb_assets.core.llm.prompt import Prompt
from kb_assets.core.llm.reply import REPLY_SCHEMA, REPLY_TOOL, parse_reply
from kb_assets.llm.passes import PassStats, ask_all
from kb_resources.llm.base import LlmConfig, LlmRequest, ProviderUnavailableError, RequestFailedError
from kb_resources.llm.client import LlmClient
from kb_resources.llm.factory import llm_config, open_llm, open_provider
from kb_resources.llm.pricing import Price, price_for
from kb_resources.llm.resource import LlmResource
from kb_resources.settings import load_settings
from tests.llmservers import FakeServer, fake_anthropic, fake_openai

KEY = "sk-test-KEEP-THIS-SECRET-0123456789"
USER = "Target: module shop.orders\n\n```python\ndef total(order):\n    return order.subtotal()\n```"
REQUEST = LlmRequest(system="Describe.", user=USER, tool_name=REPLY_TOOL, schema=REPLY_SCHEMA)


def _config(provider: str, **overrides: Any) -> LlmConfig:
    values: dict[str, Any] = {
        "provider": provider,
        "model": None,
        "max_tokens": 256,
        "concurrency": 2,
        "max_retries": 3,
        "timeout_s": 10.0,
    }
    values.update(overrides)
    return LlmConfig(**values)


@pytest.fixture
def anthropic_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeServer]:
    with fake_anthropic() as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        yield server


@pytest.fixture
def openai_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeServer]:
    with fake_openai() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        yield server


def test_anthropic_asks_for_structured_output_and_counts_tokens(anthropic_server: FakeServer) -> None:
    provider = open_provider(_config("anthropic", model="claude-sonnet-5-5"))
    completion = provider.send(REQUEST, 256)
    sent = anthropic_server.requests[0]
    assert sent.path == "/v1/messages"
    assert sent.body["model"] == "claude-sonnet-5-5"
    assert sent.body["max_tokens"] == 256
    assert sent.body["system"] == "Describe."
    assert sent.body["messages"] == [{"role": "user", "content": USER}]
    assert sent.body["output_config"] == {"format": {"type": "json_schema", "schema": REPLY_SCHEMA}}
    assert "tool_choice" not in sent.body  # forcing a tool is refused by current models
    assert KEY in json.dumps(sent.headers)  # the SDK read ANTHROPIC_API_KEY itself
    reply = parse_reply(completion.value)
    assert reply.claims[0].symbols == ("total",)
    assert completion.input_tokens == 100 + len(USER) // 4
    assert completion.output_tokens == 50


def test_anthropic_tool_use_answers_are_accepted(anthropic_server: FakeServer) -> None:
    """A server answering with a tool_use block (older protocol habits) still yields the reply."""
    anthropic_server.tool_use = True
    completion = open_provider(_config("anthropic")).send(REQUEST, 64)
    assert isinstance(completion.value, dict)
    assert parse_reply(completion.value).claims[0].symbols == ("total",)


def test_anthropic_plain_json_text_is_accepted(anthropic_server: FakeServer) -> None:
    anthropic_server.reply = lambda body: 'Here it is:\n```json\n{"summary": "S.", "claims": []}\n```'
    completion = open_provider(_config("anthropic")).send(REQUEST, 64)
    assert parse_reply(completion.value).summary == "S."


def test_openai_asks_for_structured_output(openai_server: FakeServer) -> None:
    provider = open_provider(_config("openai", model="gpt-4o-mini"))
    completion = provider.send(REQUEST, 128)
    body = openai_server.requests[0].body
    assert openai_server.requests[0].path == "/v1/chat/completions"
    assert body["messages"] == [{"role": "system", "content": "Describe."}, {"role": "user", "content": USER}]
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == REPLY_SCHEMA
    assert body["max_completion_tokens"] == 128
    assert f"Bearer {KEY}" in json.dumps(openai_server.requests[0].headers)
    assert parse_reply(completion.value).claims[0].symbols == ("total",)
    assert (completion.input_tokens, completion.output_tokens) == (100 + len(USER) // 4, 50)


@pytest.mark.parametrize("server_name", ["anthropic_server", "openai_server"])
def test_rate_limits_are_retried_with_backoff(server_name: str, request: pytest.FixtureRequest) -> None:
    """429s are retried (SDK retries off: ours only), waiting 1 s, 2 s, ... or what the server says."""
    server: FakeServer = request.getfixturevalue(server_name)
    provider = "anthropic" if server_name.startswith("anthropic") else "openai"
    waits: list[float] = []
    client = open_llm(_config(provider), sleep=waits.append)
    server.fail_next(429, 2)
    completion = client.complete(REQUEST)
    assert server.calls == 3
    assert waits == [1.0, 2.0]
    assert completion.retries == 2
    server.fail_next(429, 1, {"retry-after": "7"})
    client.complete(REQUEST)
    assert waits[-1] == 7.0
    server.fail_next(429, 4)
    with pytest.raises(RequestFailedError):
        client.complete(REQUEST)
    assert waits[-3:] == [1.0, 2.0, 4.0]


def test_a_refused_key_stops_the_pass(anthropic_server: FakeServer) -> None:
    anthropic_server.fail_next(401)
    with pytest.raises(ProviderUnavailableError, match="refused the key"):
        open_provider(_config("anthropic")).send(REQUEST, 64)


def test_missing_sdk_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)
    monkeypatch.setitem(sys.modules, "openai", None)
    for provider in ("anthropic", "openai"):
        with pytest.raises(ProviderUnavailableError) as info:
            open_provider(_config(provider))
        assert "SDK is not installed" in info.value.message
        assert "\n" not in info.value.message
    with pytest.raises(ProviderUnavailableError, match="unknown KB_LLM_PROVIDER"):
        open_provider(_config("bard"))


def test_concurrency_is_limited(anthropic_server: FakeServer) -> None:
    """With a limit of 2, requests go two at a time: the server sees 2 in flight (its barrier
    needs two to meet) and never more."""
    anthropic_server.gate = threading.Barrier(2)
    client = open_llm(_config("anthropic", concurrency=2))
    stats = PassStats(sha="0" * 40, model_id=client.model_id, prompt_version="t")
    prompts = [Prompt(system="Describe.", user=USER.replace("total", f"total_{i}")) for i in range(6)]
    answers = ask_all(client, prompts, stats)
    assert [a.claims[0].symbols for a in answers if a] == [(f"total_{i}",) for i in range(6)]
    assert anthropic_server.max_in_flight == 2
    assert stats.usage.calls == 6
    assert stats.usage.input_tokens == sum(100 + len(p.user) // 4 for p in prompts)


def test_cost_is_estimated_from_tokens() -> None:
    assert price_for("claude-sonnet-4-5") == Price(3.0, 15.0)
    assert price_for("gpt-4o-mini-2024") == Price(0.15, 0.6)
    assert price_for("some-local-model") is None
    assert price_for("some-local-model", "1,2") == Price(1.0, 2.0)
    assert Price(3.0, 15.0).cost(1_000_000, 100_000) == 4.5


def test_the_key_is_in_no_repr_or_metadata(anthropic_server: FakeServer) -> None:
    client = open_llm(_config("anthropic"))
    stats = PassStats(sha="0" * 40, model_id=client.model_id, prompt_version="t")
    ask_all(client, [Prompt(system="s", user=USER)], stats)
    assert KEY not in json.dumps(stats.metadata(), default=str)
    assert KEY not in repr(_config("anthropic"))
    assert isinstance(client, LlmClient)


@pytest.mark.parametrize(
    "environ",
    [
        {},
        {
            "KB_LLM_PROVIDER": "openai",
            "KB_LLM_MODEL": "gpt-x",
            "KB_LLM_PRICE": "1/2",
            "KB_LLM_CONCURRENCY": "7",
            "KB_LLM_MAX_TOKENS": "99",
            "KB_LLM_MAX_RETRIES": "1",
            "KB_LLM_TIMEOUT": "3.5",
            "KB_LLM_STUB": "fixed",
        },
    ],
)
def test_the_dagster_resource_carries_the_settings_model_configuration(environ: dict[str, str]) -> None:
    """The model passes' resource and the CLI's pre-flight read one mapping of the settings: the
    resource built from them gives back exactly ``llm_config``'s configuration, unset fields
    included (Dagster config holds them as empty strings)."""
    settings = load_settings({"KB_HOME": "/nonexistent", **environ})
    resource = LlmResource.from_settings(settings)
    assert resource.config() == llm_config(settings)
    assert resource.github_api_url == settings.github_api_url
