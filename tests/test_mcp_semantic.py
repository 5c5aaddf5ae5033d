"""``search_knowledge`` once units are embedded: cosine-ranked by pgvector, same units as get_knowledge.

The store is embedded by ``kb embed`` with the deterministic hashing provider (``KB_EMBED_PROVIDER=
hash``), so the expected ranking can be recomputed here from the unit texts; only the first commit
of ``fixtures/mcp_shop`` is embedded, so the second one shows a partly embedded snapshot.
``tests/test_tier3_gate.py`` searches with the real model.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from kb_assets.core.embedding_text import vector_model_id
from kb_assets.indexing.embed import texts_of
from kb_mcp.answers.search import search_answer
from kb_mcp.context import open_context
from kb_mcp.server import build_server
from kb_resources.embedding.hashing import MODEL_ID, hash_vector
from kb_resources.settings import Settings
from kb_resources.store import reads
from kb_resources.store.embeddings import pending_units
from tests.conftest import PgTestServer

if TYPE_CHECKING:
    from tests.mcpfixtures import IndexedShop

pytest_plugins = ["tests.mcpfixtures"]


@pytest.fixture(scope="module")
def embedded_shop(pg_server: PgTestServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[IndexedShop]:
    """``fixtures/mcp_shop`` indexed in a database of its own, its first commit embedded."""
    from tests.mcpfixtures import IndexedShop, index_shop  # at run time: pytest imports the plugin

    repo, shas, env, database = index_shop(pg_server, tmp_path_factory.mktemp("mcp-semantic"))
    env.extra["KB_EMBED_PROVIDER"] = "hash"
    embedded = env.kb("embed", repo, "--sha", shas[0])
    assert embedded.code == 0, embedded.stderr
    settings = Settings(kb_home=env.home, dagster_home=env.home / "dagster", db_url=env.db_url)
    context = open_context(repo, settings)
    try:
        yield IndexedShop(repo, shas, env, context, build_server(context))
    finally:
        context.close()
        env.close()
        pg_server.drop_database(database)


def expected_similarities(shop: IndexedShop, sha: str, query: str) -> dict[str, float]:
    """Cosine similarity of the query to every unit of the snapshot, recomputed from the unit texts."""
    with shop.context.store.engine.connect() as conn:
        units = pending_units(conn, sha, "no-such-model")  # every unit, with its text's inputs
    q = hash_vector(query)
    return {
        u.artifact_id: sum(a * b for a, b in zip(q, hash_vector(text), strict=True))
        for u, text in zip(units, texts_of(units), strict=True)
    }


def test_search_is_cosine_ranked_over_the_snapshot(embedded_shop: IndexedShop) -> None:
    """The units come back in descending cosine similarity, exactly the k best of the snapshot."""
    first = embedded_shop.shas[0]
    query = "apply a discount rate to an amount"
    answer = embedded_shop.answer(
        "search_knowledge", {"query": query, "sha": first, "k": 5, "token_budget": 100000}
    )
    assert answer["status"] == "ok"
    assert answer["ranking"] == "semantic"
    assert answer["model"] == vector_model_id(MODEL_ID)
    assert answer["message"] is None
    assert answer["not_embedded"] == 0
    expected = expected_similarities(embedded_shop, first, query)
    got = answer["similarity"]
    assert len(got) == 5
    assert got == sorted(got, reverse=True)
    best = sorted(expected.values(), reverse=True)[:5]
    assert got == pytest.approx(best, abs=1e-3)
    for unit, similarity in zip(answer["units"], got, strict=True):
        assert math.isclose(similarity, expected[unit["artifact_id"]], abs_tol=1e-3)
    assert answer["units"][0]["artifact_id"] == max(expected, key=lambda aid: expected[aid])


def test_search_units_are_get_knowledge_units(embedded_shop: IndexedShop) -> None:
    """Each unit has the same record, provenance and freshness as get_knowledge gives for its key
    at that commit (units of the first commit that changed later are stale)."""
    first, head = embedded_shop.shas
    answer = embedded_shop.answer("search_knowledge", {"query": "order totals", "sha": first, "k": 20})
    assert answer["units"]
    stale = 0
    for unit in answer["units"]:
        same: dict[str, Any] = embedded_shop.answer(
            "get_knowledge", {"target": unit["logical_key"], "sha": first, "token_budget": 100000}
        )
        match = [u for u in same["units"] if u["artifact_id"] == unit["artifact_id"]]
        assert match == [unit]
        assert unit["provenance"]
        assert all(p.endswith(f"@{first}") for p in unit["provenance"])
        stale += unit["freshness"]["status"] == "stale"
    assert unit["freshness"]["as_of"] == head
    keys = {u["logical_key"] for u in answer["units"]}
    assert "public:shop.total" in keys  # re-identified by the second commit
    assert stale >= 1


def test_search_respects_the_token_budget(embedded_shop: IndexedShop) -> None:
    """A small budget keeps the answer within it and counts every unit left out, per kind."""
    first = embedded_shop.shas[0]
    full = embedded_shop.answer(
        "search_knowledge", {"query": "shop", "sha": first, "k": 30, "token_budget": 100000}
    )
    small = embedded_shop.answer(
        "search_knowledge", {"query": "shop", "sha": first, "k": 30, "token_budget": 600}
    )
    assert small["tokens_used"] <= 600
    assert 0 < len(small["units"]) < len(full["units"])
    assert small["omitted"]["total"] == len(full["units"]) - len(small["units"])
    assert sum(small["omitted"]["by_kind"].values()) == small["omitted"]["total"]
    assert small["similarity"] == full["similarity"][: len(small["units"])]
    assert [u["artifact_id"] for u in small["units"]] == [u["artifact_id"] for u in full["units"]][
        : len(small["units"])
    ]


def test_a_partly_embedded_snapshot_says_what_it_cannot_find(embedded_shop: IndexedShop) -> None:
    """The second commit was never embedded, but shares most ids with the first: its search is
    semantic over what is embedded and names how many units are missing and what to run."""
    first, head = embedded_shop.shas
    with embedded_shop.context.store.engine.connect() as conn:
        new = set(reads.snapshot_artifact_ids(conn, head)) - set(reads.snapshot_artifact_ids(conn, first))
    answer = embedded_shop.answer("search_knowledge", {"query": "sales tax"})
    assert answer["sha"] == head
    assert answer["status"] == "ok"
    assert answer["not_embedded"] == len(new) > 0
    assert "kb embed" in answer["message"]
    assert not {u["artifact_id"] for u in answer["units"]} & new


def test_without_a_query_embedder_the_search_falls_back_to_keywords(embedded_shop: IndexedShop) -> None:
    """A snapshot embedded by a model this server cannot run is searched by keywords, with a reason."""
    blind = dataclasses.replace(embedded_shop.context, query_embedders=lambda model: None)
    answer = search_answer(blind, "tax", embedded_shop.shas[-1], 5, 4000)
    assert answer.status == "no_query_embedder"
    assert answer.ranking == "lexical"
    assert answer.message is not None
    assert MODEL_ID in answer.message
    assert "import:shop.orders->shop.tax" in {u.logical_key for u in answer.units}


def test_the_server_never_writes(embedded_shop: IndexedShop, tmp_path: Path) -> None:
    """Semantic search runs on the read-only connections (nothing to embed is written)."""
    with embedded_shop.context.store.engine.connect() as conn:
        before = reads.embedding_coverage(conn, embedded_shop.shas[-1])
    embedded_shop.answer("search_knowledge", {"query": "checkout"})
    with embedded_shop.context.store.engine.connect() as conn:
        assert reads.embedding_coverage(conn, embedded_shop.shas[-1]) == before
        assert conn.exec_driver_sql("SHOW default_transaction_read_only").scalar() == "on"
