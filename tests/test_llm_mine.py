"""``kb mine`` end to end on the stub provider (the ADR-mining floor gate) and ``--prs`` against a
local fake GitHub API."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kb_resources.llm import stub
from tests.kbfixtures import KbEnv
from tests.llmfixtures import PR_12, ShopHistory, build_shop
from tests.llmservers import fake_github


def _mine(kb_env: KbEnv, repo: Path, *args: str) -> tuple[str, int]:
    before = stub.CALLS[0]
    done = kb_env.kb("mine", repo, *args)
    assert done.code == 0, done.stderr
    return done.stdout, stub.CALLS[0] - before


def _decisions(kb_env: KbEnv, repo: Path) -> dict[str, dict[str, Any]]:
    records = kb_env.kb("export", repo, "--kind", "decision").jsonl()
    return {r["payload"]["commit"]: r for r in records}


def _indexed_shop(kb_env: KbEnv, tmp_path: Path) -> ShopHistory:
    shop = build_shop(tmp_path / "shop")
    kb_env.extra["KB_LLM_PROVIDER"] = "stub"
    assert kb_env.kb("index", shop.repo).code == 0
    return shop


def _message(shop: ShopHistory, sha: str) -> str:
    from kb_resources.git.repo import GitRepo

    return GitRepo.open(str(shop.repo)).commit_info(sha).message


def test_one_grounded_decision_per_code_commit(kb_env: KbEnv, tmp_path: Path) -> None:
    """Gate: merges skipped, the docs-only commit never reaches the model, each code commit gets one
    decision grounded (role ``changed``) on exactly the spans it changed, message verbatim, only
    backed claims."""
    shop = _indexed_shop(kb_env, tmp_path)
    line, calls = _mine(kb_env, shop.repo)
    assert calls == 3
    assert "1 merges" in line
    assert "1 docs-only" in line
    found = _decisions(kb_env, shop.repo)
    assert set(found) == set(shop.code_commits)
    for sha, record in found.items():
        payload = record["payload"]
        assert record["logical_key"] == f"decision:{sha}"
        assert record["method"] == "llm_grounded"
        assert 0.0 < record["confidence"] < 1.0
        assert payload["message"] == _message(shop, sha)
        assert {g["role"] for g in record["grounding"]} == {"changed"}
        grounding = {g["span_id"] for g in record["grounding"]}
        assert payload["claims"]
        for claim in payload["claims"]:
            assert stub.FABRICATED_NAME not in json.dumps(claim)
            assert claim["symbols"]
            assert set(claim["span_ids"]) <= grounding
    rounding = found[shop.rounding]
    assert {(g["file"], g["start_line"]) for g in rounding["grounding"]} == {("shop/orders.py", 17)}
    assert rounding["payload"]["changed"] == ["shop.orders.total"]
    emails = found[shop.emails]
    assert emails["payload"]["changed"] == ["shop.models.Customer", "shop.models.Customer.check_email"]
    assert "pr" not in emails["payload"]


def test_remining_is_idempotent_and_force_redoes(kb_env: KbEnv, tmp_path: Path) -> None:
    """A second run asks nothing and changes nothing; ``--force`` asks again (same stub, same ids)."""
    shop = _indexed_shop(kb_env, tmp_path)
    _mine(kb_env, shop.repo)
    first = {sha: r["artifact_id"] for sha, r in _decisions(kb_env, shop.repo).items()}
    line, calls = _mine(kb_env, shop.repo)
    assert calls == 0
    assert "3 stored (3 reused, 0 calls" in line
    assert {sha: r["artifact_id"] for sha, r in _decisions(kb_env, shop.repo).items()} == first
    _, calls = _mine(kb_env, shop.repo, "--force")
    assert calls == 3
    assert {sha: r["artifact_id"] for sha, r in _decisions(kb_env, shop.repo).items()} == first
    _, calls = _mine(kb_env, shop.repo, "--force", "--max-commits", "1")
    assert calls == 1
    assert set(_decisions(kb_env, shop.repo)) == set(shop.code_commits)  # the others stay published


def test_a_commit_with_no_backed_claim_stores_no_decision(kb_env: KbEnv, tmp_path: Path) -> None:
    """Gate: replies made only of fabricated claims store nothing (counted as unsupported)."""
    shop = _indexed_shop(kb_env, tmp_path)
    kb_env.extra["KB_LLM_STUB"] = '{"genuine": false}'
    line, calls = _mine(kb_env, shop.repo)
    assert calls == 3
    assert "0 stored (0 reused, 3 calls, 3 unsupported" in line
    assert _decisions(kb_env, shop.repo) == {}
    line, calls = _mine(kb_env, shop.repo)
    assert calls == 0
    assert "0 calls, 0 unsupported, 3 known unsupported" in line
    _, calls = _mine(kb_env, shop.repo, "--force")
    assert calls == 3


def test_prs_add_context_and_identity_and_degrade_when_a_fetch_fails(kb_env: KbEnv, tmp_path: Path) -> None:
    """``--prs``: PR 12 is fetched (its digest becomes part of the decision's identity), PR 13 is
    not found (the commit is mined without it, counted); the token is sent and stored nowhere."""
    shop = _indexed_shop(kb_env, tmp_path)
    _mine(kb_env, shop.repo)
    plain = _decisions(kb_env, shop.repo)
    with fake_github({("acme", "shop", 12): {"number": 12, **PR_12}}) as github:
        kb_env.extra.update(KB_GITHUB_API_URL=github.url, GITHUB_TOKEN="ghp_TESTTOKEN123")
        line, calls = _mine(kb_env, shop.repo, "--prs")
    assert sorted(r.path for r in github.requests) == [
        "/repos/acme/shop/pulls/12",
        "/repos/acme/shop/pulls/13",
    ]
    assert {r.headers.get("Authorization") for r in github.requests} == {"Bearer ghp_TESTTOKEN123"}
    assert "1 pr-fetched" in line
    assert "1 pr-failed" in line
    assert calls == 1  # only the commit whose PR text is new; the others reuse their decisions
    found = _decisions(kb_env, shop.repo)
    rounding = found[shop.rounding]
    assert rounding["payload"]["pr"]["number"] == 12
    assert rounding["payload"]["pr"]["title"] == PR_12["title"]
    assert len(rounding["payload"]["pr"]["digest"]) == 64
    assert rounding["artifact_id"] != plain[shop.rounding]["artifact_id"]
    assert rounding["grounding"] == plain[shop.rounding]["grounding"]  # context, never grounding
    assert found[shop.emails]["artifact_id"] == plain[shop.emails]["artifact_id"]
    assert "ghp_TESTTOKEN123" not in json.dumps(found)
