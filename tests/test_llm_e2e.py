"""``kb describe`` and ``kb mine`` through the real SDK adapters, against local servers speaking the
Anthropic Messages and OpenAI chat-completions protocols: grounded units are stored, fabricated
claims never survive, a second run makes no request, the accounting lands in the asset metadata,
and the API key is nowhere in the output, the store, Dagster's storage or KB_HOME."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from kb_resources.llm import stub
from kb_resources.llm.pricing import price_for
from tests.kbfixtures import KbEnv
from tests.llmfixtures import build_shop
from tests.llmservers import FakeServer, fake_anthropic, fake_openai, user_text

SECRET = "sk-ant-api03-DO-NOT-STORE-7f3a9c"


@pytest.fixture
def anthropic_env(kb_env: KbEnv) -> Iterator[FakeServer]:
    with fake_anthropic() as server:
        kb_env.extra.update(
            KB_LLM_PROVIDER="anthropic", ANTHROPIC_BASE_URL=server.url, ANTHROPIC_API_KEY=SECRET
        )
        yield server


def _tokens(server: FakeServer, start: int = 0) -> tuple[int, int]:
    requests = server.requests[start:]
    return sum(100 + len(user_text(r.body)) // 4 for r in requests), 50 * len(requests)


def _all_text(engine: sa.Engine) -> list[str]:
    """Every row of every table of the store and of Dagster's storage, as text."""
    with engine.connect() as conn:
        tables = conn.execute(
            sa.text(
                "SELECT table_schema, table_name FROM information_schema.tables "
                "WHERE table_schema NOT IN ('pg_catalog', 'information_schema') AND table_type = 'BASE TABLE'"
            )
        ).all()
        rows: list[str] = []
        for schema, table in tables:
            rows += conn.execute(sa.text(f'SELECT t::text FROM "{schema}"."{table}" t')).scalars().all()
    return rows


def test_describe_and_mine_through_the_anthropic_protocol(
    kb_env: KbEnv, anthropic_env: FakeServer, tmp_path: Path
) -> None:
    shop = build_shop(tmp_path / "shop")
    assert kb_env.kb("index", shop.repo).code == 0
    described = kb_env.kb("describe", shop.repo)
    assert described.code == 0, described.stderr
    calls = anthropic_env.calls
    records = kb_env.kb("export", shop.repo, "--kind", "description").jsonl()
    assert len(records) == calls > 0
    for record in records:
        assert record["payload"]["model_id"] == "anthropic:claude-sonnet-5-5"
        assert record["payload"]["claims"]
        assert stub.FABRICATED_NAME not in json.dumps(record["payload"]["claims"])
    tokens_in, tokens_out = _tokens(anthropic_env)
    price = price_for("claude-sonnet-5-5")
    assert price is not None
    assert f"{tokens_in}+{tokens_out} tokens, ${price.cost(tokens_in, tokens_out):.4f}" in described.stdout

    again = kb_env.kb("describe", shop.repo)
    assert again.code == 0
    assert anthropic_env.calls == calls  # unchanged grounding: no request at all
    assert "0 calls" in again.stdout

    mined = kb_env.kb("mine", shop.repo)
    assert mined.code == 0, mined.stderr
    assert anthropic_env.calls == calls + 3
    decisions = kb_env.kb("export", shop.repo, "--kind", "decision").jsonl()
    assert {d["payload"]["commit"] for d in decisions} == set(shop.code_commits)

    engine = sa.create_engine(kb_env.db_url)
    try:
        rows = _all_text(engine)
    finally:
        engine.dispose()
    metadata = [r for r in rows if "estimated_cost_usd" in r]
    assert metadata, "the pass's accounting is not in Dagster's event log"
    assert any('"input_tokens"' in r for r in metadata)
    outputs = described.stdout + described.stderr + again.stdout + mined.stdout + mined.stderr
    exported = kb_env.kb("export", shop.repo).stdout
    assert SECRET not in outputs + exported
    assert not [r for r in rows if SECRET in r]
    leaked = [p for p in kb_env.home.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]
    assert leaked == []


def test_mine_through_the_openai_protocol(kb_env: KbEnv, tmp_path: Path) -> None:
    shop = build_shop(tmp_path / "shop")
    with fake_openai() as server:
        kb_env.extra.update(
            KB_LLM_PROVIDER="openai",
            KB_LLM_MODEL="local-model",
            OPENAI_BASE_URL=f"{server.url}/v1",
            OPENAI_API_KEY=SECRET,
            KB_LLM_PRICE="1,2",
        )
        assert kb_env.kb("index", shop.repo).code == 0
        mined = kb_env.kb("mine", shop.repo)
        assert mined.code == 0, mined.stderr
        assert server.calls == 3
        tokens_in, tokens_out = _tokens(server)
        assert f"{tokens_in}+{tokens_out} tokens" in mined.stdout
        assert "cost unknown" not in mined.stdout
        assert kb_env.kb("mine", shop.repo).code == 0
        assert server.calls == 3
    decisions = kb_env.kb("export", shop.repo, "--kind", "decision").jsonl()
    assert {d["payload"]["model_id"] for d in decisions} == {"openai:local-model"}
    assert len(decisions) == 3


def test_rate_limited_requests_are_retried_within_a_pass(
    kb_env: KbEnv, anthropic_env: FakeServer, tmp_path: Path
) -> None:
    """A 429 (retry-after-ms 0) mid-pass is retried; nothing is lost, the retries are counted."""
    shop = build_shop(tmp_path / "shop")
    kb_env.extra["KB_LLM_CONCURRENCY"] = "1"
    assert kb_env.kb("index", shop.repo).code == 0
    anthropic_env.fail_next(429, 2, {"retry-after-ms": "0"})
    mined = kb_env.kb("mine", shop.repo)
    assert mined.code == 0, mined.stderr
    assert anthropic_env.calls == 5
    assert "0 failed" in mined.stdout
    assert len(kb_env.kb("export", shop.repo, "--kind", "decision").jsonl()) == 3
