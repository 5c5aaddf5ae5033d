"""``bench/ab.py`` runs end to end against a local server speaking the Anthropic protocol, and
without a key it says so and exits 0 (non-gating)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from tests.benchmodules import bench_module
from tests.kbfixtures import KbEnv
from tests.llmfixtures import build_shop
from tests.llmservers import fake_anthropic, user_text


def _reply(body: dict[str, Any]) -> Any:
    """Judge requests get a score that depends on the answer; answerer requests echo the context."""
    schema = body["output_config"]["format"]["schema"]
    text = user_text(body)
    if "accuracy" in schema["properties"]:
        grounded = "[api_route]" in text or "knowbase" in text
        return {
            "accuracy": 0.9 if grounded else 0.4,
            "hallucination": 0.0 if grounded else 0.3,
            "reason": "ok",
        }
    source = "knowbase" if "[api_route]" in text or "[import_edge]" in text else "rag"
    return {"answer": f"From the {source} context: {text.splitlines()[1][:80]}"}


def _run(kb_env: KbEnv, monkeypatch: pytest.MonkeyPatch, *argv: str) -> tuple[int, str]:
    for name, value in kb_env.environ.items():
        monkeypatch.setenv(name, value)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = bench_module("ab", monkeypatch).main(list(argv))
    return code, out.getvalue()


def test_ab_runs_end_to_end(kb_env: KbEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shop = build_shop(tmp_path / "shop")
    assert kb_env.kb("index", shop.repo).code == 0
    out_file = tmp_path / "ab.json"
    with fake_anthropic(_reply) as server:
        kb_env.extra.update(KB_LLM_PROVIDER="anthropic", ANTHROPIC_BASE_URL=server.url, ANTHROPIC_API_KEY="k")
        code, out = _run(kb_env, monkeypatch, str(shop.repo), "-n", "3", "--out", str(out_file))
    assert code == 0, out
    assert server.calls == 3 * 2 * 2  # per question: two answers, two verdicts
    assert "knowbase: mean accuracy" in out
    assert "rag: mean accuracy" in out
    assert "estimated cost $" in out
    results = json.loads(out_file.read_text())
    assert {r["arm"] for r in results} == {"knowbase", "rag"}
    assert len(results) == 6
    assert all(r["score"] is not None for r in results)
    first = results[0]
    assert first["target"] == "api:POST /checkout"
    assert first["answer"].startswith("From the knowbase context")


def test_ab_without_a_key_is_skipped(kb_env: KbEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shop = build_shop(tmp_path / "shop")
    assert kb_env.kb("index", shop.repo).code == 0
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "cfg").mkdir()
    monkeypatch.setenv("ANTHROPIC_CONFIG_DIR", str(tmp_path / "cfg"))
    kb_env.extra["KB_LLM_PROVIDER"] = "anthropic"
    code, out = _run(kb_env, monkeypatch, str(shop.repo))
    assert code == 0
    assert out.startswith("bench/ab.py: skipped (non-gating)")
    assert "ANTHROPIC_API_KEY" in out
