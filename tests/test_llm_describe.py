"""``kb describe`` end to end on the stub provider: the semantic grounding floor gate.

The stub answers every target with one genuine claim (a name the target's code defines or uses)
and fabricated ones (a made-up name, no symbol, a real name next to a made-up one); tests add
more through ``KB_LLM_STUB``. Whatever a target's kind, only claims the target's own spans back
may be stored, a target with no surviving claim stores nothing, and an unchanged target is never
sent to the model twice.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kb_resources.llm import stub
from tests.gitfixtures import commit_tree
from tests.kbfixtures import KbEnv
from tests.llmfixtures import PRICING, build_shop

DESCRIBED_KINDS = {"route", "event_handler", "entity", "module", "package", "repo"}
"""The target kinds the shop has units for (it has no process path: no route reaches a sink)."""

FOREIGN = {"text": "It applies the discount.", "symbols": ["apply_discount"]}
"""A real name of the repository that most targets' code neither defines nor mentions."""
DOCSTRING_ONLY = {"text": "It takes a rate.", "symbols": ["Take"]}
"""A word that appears only in a docstring: names in strings back nothing."""


def _describe(kb_env: KbEnv, repo: Path, *args: str) -> tuple[str, int]:
    before = stub.CALLS[0]
    done = kb_env.kb("describe", repo, *args)
    assert done.code == 0, done.stderr
    return done.stdout, stub.CALLS[0] - before


def _descriptions(kb_env: KbEnv, repo: Path, *args: str) -> list[dict[str, Any]]:
    return kb_env.kb("export", repo, "--kind", "description", *args).jsonl()


def test_only_backed_claims_survive_on_every_describe_path(kb_env: KbEnv, tmp_path: Path) -> None:
    """Gate: fabricated claims are dropped for every target kind; what survives is grounded,
    ``llm_grounded``, below certainty and carries its prompt version and model."""
    shop = build_shop(tmp_path / "shop")
    kb_env.extra.update(KB_LLM_PROVIDER="stub", KB_LLM_STUB=json.dumps({"claims": [FOREIGN, DOCSTRING_ONLY]}))
    assert kb_env.kb("index", shop.repo).code == 0
    line, calls = _describe(kb_env, shop.repo)
    records = _descriptions(kb_env, shop.repo)
    assert {r["payload"]["target_kind"] for r in records} == DESCRIBED_KINDS
    assert calls == len(records) + 0  # every target was asked once; each kept its genuine claim
    assert f"{len(records)} stored (0 reused, {calls} calls" in line
    for record in records:
        payload = record["payload"]
        grounding = {g["span_id"] for g in record["grounding"]}
        assert record["method"] == "llm_grounded"
        assert 0.0 < record["confidence"] < 1.0
        assert payload["model_id"] == "stub:kb-stub-1"
        assert payload["prompt_version"].startswith("describe-")
        assert payload["claims_offered"] == 6
        assert payload["claims"], record["logical_key"]
        for claim in payload["claims"]:
            assert claim["symbols"], claim
            assert stub.FABRICATED_NAME not in json.dumps(claim)
            assert claim["symbols"] != ["Take"]
            assert set(claim["span_ids"]) <= grounding
        if payload["target"] in ("shop.api", "shop.models", "shop.tax"):  # never mention it
            assert FOREIGN["text"] not in [c["text"] for c in payload["claims"]], payload["target"]
    for backed in ("describe:shop.pricing", "describe:shop.orders"):  # define / import it
        record = next(r for r in records if r["logical_key"] == backed)
        assert FOREIGN["text"] in [c["text"] for c in record["payload"]["claims"]]


def test_unchanged_targets_are_never_sent_twice(kb_env: KbEnv, tmp_path: Path) -> None:
    """A second run makes no model call and yields the same ids; after a commit that changes one
    module, only the targets grounded on it (the module and its package) are asked again."""
    shop = build_shop(tmp_path / "shop")
    kb_env.extra["KB_LLM_PROVIDER"] = "stub"
    assert kb_env.kb("index", shop.repo).code == 0
    _, first_calls = _describe(kb_env, shop.repo)
    first = {r["logical_key"]: r["artifact_id"] for r in _descriptions(kb_env, shop.repo)}
    line, again = _describe(kb_env, shop.repo)
    assert again == 0
    assert first_calls == len(first)
    assert f"{len(first)} stored ({len(first)} reused, 0 calls" in line
    assert {r["logical_key"]: r["artifact_id"] for r in _descriptions(kb_env, shop.repo)} == first

    files = {p: (shop.repo / p).read_text() for p in ("shop/__init__.py", "shop/orders.py", "shop/api.py")}
    files |= {p: (shop.repo / p).read_text() for p in ("shop/models.py", "shop/tax.py", "README.md")}
    files["shop/pricing.py"] = PRICING.replace("(1.0 - rate)", "max(0.0, 1.0 - rate)")
    commit_tree(shop.repo, files, "Never charge a negative amount")
    assert kb_env.kb("index", shop.repo).code == 0
    _, calls = _describe(kb_env, shop.repo)
    second = {r["logical_key"]: r["artifact_id"] for r in _descriptions(kb_env, shop.repo)}
    changed = {k for k in second if second[k] != first.get(k)}
    assert changed == {"describe:shop.pricing", "describe:shop"}
    assert calls == 2


def test_a_target_with_no_surviving_claim_is_not_stored(kb_env: KbEnv, tmp_path: Path) -> None:
    """Without its genuine claim every reply is fabricated: nothing is stored, all is counted."""
    shop = build_shop(tmp_path / "shop")
    kb_env.extra.update(KB_LLM_PROVIDER="stub", KB_LLM_STUB='{"genuine": false}')
    assert kb_env.kb("index", shop.repo).code == 0
    line, calls = _describe(kb_env, shop.repo)
    assert calls > 0
    assert f"0 stored (0 reused, {calls} calls, {calls} unsupported" in line
    assert _descriptions(kb_env, shop.repo) == []
    gaps = _gaps(kb_env, "describe")
    assert len(gaps) == calls
    assert {reason for reason, _ in gaps} == {"no_backed_claim"}
    assert "describe:shop.pricing: no claim of the model's reply is backed by its code" in str(gaps)
    line, again = _describe(kb_env, shop.repo)  # what yielded nothing is never sent (billed) again
    assert again == 0
    assert f"0 calls, 0 unsupported, {calls} known unsupported" in line
    assert len(_gaps(kb_env, "describe")) == calls
    _, forced = _describe(kb_env, shop.repo, "--force")
    assert forced == calls


def _gaps(kb_env: KbEnv, source: str) -> list[tuple[str, str]]:
    import sqlalchemy as sa

    engine = sa.create_engine(kb_env.db_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                sa.text("SELECT reason, detail FROM gap WHERE source = :s ORDER BY detail"), {"s": source}
            ).all()
    finally:
        engine.dispose()
    return [(str(r), str(d)) for r, d in rows]


def test_kind_and_limit_bound_the_calls_and_index_keeps_descriptions(kb_env: KbEnv, tmp_path: Path) -> None:
    """``--kind``/``--limit`` bound what is sent; ``kb index`` never runs a model pass, and
    re-indexing a described commit keeps its descriptions published."""
    shop = build_shop(tmp_path / "shop")
    kb_env.extra.update(KB_LLM_PROVIDER="stub", KB_LLM_STUB='{"malformed": ["Target: module shop.tax"]}')
    before = stub.CALLS[0]
    assert kb_env.kb("index", shop.repo).code == 0
    assert stub.CALLS[0] == before
    line, calls = _describe(kb_env, shop.repo, "--kind", "module", "--limit", "3")
    assert calls == 3
    assert {r["payload"]["target_kind"] for r in _descriptions(kb_env, shop.repo)} == {"module"}
    line, calls = _describe(kb_env, shop.repo, "--kind", "module")
    assert "1 failed" in line  # shop.tax's reply is not the reply schema: counted, not stored
    modules = {r["logical_key"] for r in _descriptions(kb_env, shop.repo)}
    assert modules == {f"describe:shop.{m}" for m in ("api", "models", "orders", "pricing")}
    ids = sorted(r["artifact_id"] for r in _descriptions(kb_env, shop.repo))
    assert kb_env.kb("index", shop.repo, "--full").code == 0
    assert sorted(r["artifact_id"] for r in _descriptions(kb_env, shop.repo)) == ids


def test_missing_key_is_one_line_exit_2(kb_env: KbEnv, tmp_path: Path, monkeypatch: Any) -> None:
    """No key for the default provider: one line on stderr naming the variable, exit 2, no run."""
    shop = build_shop(tmp_path / "shop")
    assert kb_env.kb("index", shop.repo).code == 0
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "no-config").mkdir()
    monkeypatch.setenv("ANTHROPIC_CONFIG_DIR", str(tmp_path / "no-config"))
    done = kb_env.kb("describe", shop.repo)
    assert done.code == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert "ANTHROPIC_API_KEY" in done.stderr
    kb_env.extra["KB_LLM_PROVIDER"] = "openai"
    done = kb_env.kb("mine", shop.repo)
    assert done.code == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert "OPENAI_API_KEY" in done.stderr


def test_claims_backed_check_catches_a_tampered_claim(kb_env: KbEnv, tmp_path: Path) -> None:
    """The ``claims_backed`` check re-runs the floor over what the store holds: a claim slipped into
    a stored description (and reused by the next run) fails it, and ``kb describe`` exits 1."""
    import sqlalchemy as sa

    shop = build_shop(tmp_path / "shop")
    kb_env.extra["KB_LLM_PROVIDER"] = "stub"
    assert kb_env.kb("index", shop.repo).code == 0
    first = kb_env.kb("describe", shop.repo)
    assert first.code == 0
    assert first.stderr == ""
    forged = json.dumps([{"text": "It calls the ghost.", "symbols": ["ghost_helper"], "span_ids": []}])
    engine = sa.create_engine(kb_env.db_url)
    try:
        with engine.begin() as conn:
            conn.execute(
                sa.text(
                    "UPDATE artifact SET payload = jsonb_set(payload, '{claims}', "
                    "(payload->'claims') || CAST(:forged AS jsonb)) "
                    "WHERE logical_key = 'describe:shop.pricing'"
                ),
                {"forged": forged},
            )
    finally:
        engine.dispose()
    again = kb_env.kb("describe", shop.repo)
    assert again.code == 1
    assert "descriptions.claims_backed" in again.stderr
    assert "describe:shop.pricing: claim 'It calls the ghost.' unbacked:ghost_helper" in again.stderr
