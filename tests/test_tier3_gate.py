"""Tier-3 gate: grounded knowledge against RAG over source, on questions whose answers span two files.

Three fixture repositories (``fixtures/api_oracle``: FastAPI routes whose handler, response model
and prefix live in different files; ``fixtures/events_oracle``: handlers registered on models in
other files; ``fixtures/entities_oracle``: SQLAlchemy models whose base and related models live in
other files) are indexed, embedded with the real model (all-MiniLM-L6-v2, offline) and chunked for the
RAG baseline (``kb embed --rag``). Each question is labelled with the unit that answers it and the
two files the answer spans.

- knowledge arm: ``search_knowledge`` (k = 5); a question's recall is the share of its files that
  one returned unit is grounded on. Asserted to be 1.0: one grounded artifact spans both files.
- RAG arm: the 5 nearest source chunks; a question's recall is the share of its files among them.
  Printed (run with ``-s``), never asserted: it is the baseline being measured.

The same module proves that the MCP server loads torch on its first semantic search, not before.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from kb_assets.core.embedding_text import vector_model_id
from kb_mcp.answers.search import search_answer
from kb_mcp.context import ServeContext, open_context
from kb_resources.embedding.local import MODEL_ID, LocalEmbedder
from kb_resources.settings import Settings
from kb_resources.store.rag_chunks import nearest_chunks
from tests.conftest import PgTestServer
from tests.gitfixtures import build_repo
from tests.kbfixtures import KbEnv

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
K = 5


@dataclass(frozen=True)
class Question:
    repo: str
    text: str
    unit: str
    """The logical key of the unit that answers it."""
    files: frozenset[str]
    """The two files the answer spans."""


def q(repo: str, text: str, unit: str, *files: str) -> Question:
    return Question(repo, text, unit, frozenset(files))


QUESTIONS = [
    q("api", "Which endpoint creates a new user, and what does it return?", "api:POST /api/v1/users/",
      "shop/routers/users.py", "shop/schemas.py"),
    q("api", "How do I list the reviews of a catalog item?",
      "api:GET /api/v1/catalog/items/{item_id}/reviews/", "shop/routers/reviews.py", "shop/schemas.py"),
    q("api", "Search the catalog for items matching a query string", "api:GET /api/v1/catalog/items/search",
      "shop/routers/items.py", "shop/schemas.py"),
    q("api", "How can an administrator ban a user?", "api:POST /admin/users/{user_id}/ban",
      "shop/admin.py", "shop/schemas.py"),
    q("api", "Fetch a single user by their id", "api:GET /api/v1/users/{user_id}",
      "shop/routers/users.py", "shop/schemas.py"),
    q("api", "Update an item of the catalog", "api:PUT /api/v1/catalog/items/{item_id}",
      "shop/routers/items.py", "shop/schemas.py"),
    q("api", "Delete a user, and under which API prefix is that served?",
      "api:DELETE /api/v1/users/{user_id}", "shop/routers/users.py", "shop/settings.py"),
    q("events", "What runs before a user row is inserted into the database?", "event:shop.handlers.audit",
      "src/shop/handlers.py", "src/shop/wiring.py"),
    q("events", "What stamps an order after it has been inserted?", "event:shop.handlers.stamp",
      "src/shop/handlers.py", "src/shop/wiring.py"),
    q("events", "What lowercases a user's email address when it is set?", "event:shop.db.lower_email",
      "src/shop/db.py", "src/shop/models.py"),
    q("events", "Which function closes the connection pools when the application shuts down?",
      "event:shop.lifecycle.close_pools", "src/shop/lifecycle.py", "src/shop/app.py"),
    q("entities", "Which database model holds a customer's orders with their line items?",
      "entity:shop.orm.orders.Order", "shop/orm/orders.py", "shop/orm/customers.py"),
    q("entities", "What does a customer record store, and which orders belong to a customer?",
      "entity:shop.orm.customers.Customer", "shop/orm/customers.py", "shop/orm/orders.py"),
    q("entities", "Which model is an urgent order with a priority, and what table base does it use?",
      "entity:shop.orm.orders.RushOrder", "shop/orm/orders.py", "shop/db.py"),
]  # fmt: skip


@dataclass
class Arm:
    """One indexed, embedded and chunked fixture repository, served read-only."""

    repo: Path
    sha: str
    env: KbEnv
    context: ServeContext


@pytest.fixture(scope="module")
def arms(pg_server: PgTestServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Arm]]:
    """Both fixtures indexed, embedded with the real model and chunked, each in its own database."""
    root = tmp_path_factory.mktemp("tier3")
    opened: dict[str, Arm] = {}
    databases = []
    try:
        for name, fixture in (
            ("api", "api_oracle"),
            ("events", "events_oracle"),
            ("entities", "entities_oracle"),
        ):
            repo = root / name
            [sha] = build_repo(FIXTURES / fixture, repo)
            database = pg_server.create_database()
            databases.append(database)
            env = KbEnv(home=root / f"{name}_home", db_url=pg_server.url(database))
            env.extra["KB_EMBED_PROVIDER"] = "local"
            for args in (("index", repo), ("embed", repo, "--rag")):
                result = env.kb(*args)
                assert result.code == 0, result.stderr
            assert f"with {vector_model_id(MODEL_ID)}: " in result.stdout
            settings = Settings(kb_home=env.home, dagster_home=env.home / "dagster", db_url=env.db_url)
            opened[name] = Arm(repo, sha, env, open_context(repo, settings))
        yield opened
    finally:
        for arm in opened.values():
            arm.context.close()
            arm.env.close()
        for database in databases:
            pg_server.drop_database(database)


def test_tier3_knowledge_recall_is_one_and_rag_recall_is_reported(
    arms: dict[str, Arm], tmp_path: Path
) -> None:
    """Every question's labelled unit is among the 5 best and alone spans both files; the RAG
    arm's recall over the same questions is printed."""
    query_model = LocalEmbedder()
    rows = []
    for question in QUESTIONS:
        arm = arms[question.repo]
        answer = search_answer(arm.context, question.text, None, K, 100_000)
        assert answer.status == "ok", answer.message
        assert answer.ranking == "semantic"
        keys = [u.logical_key for u in answer.units]
        knowledge = max(len(question.files & {g.file for g in u.grounding}) for u in answer.units) / 2
        with arm.context.store.engine.connect() as conn:
            chunks = nearest_chunks(conn, arm.sha, MODEL_ID, query_model.embed([question.text])[0], K)
        rag = len(question.files & {c.path for c in chunks}) / 2
        rows.append((question, keys, knowledge, rag))
        assert question.unit in keys, f"{question.text!r}: {keys}"
        labelled = answer.units[keys.index(question.unit)]
        assert question.files <= {g.file for g in labelled.grounding}

    knowledge_recall = sum(r[2] for r in rows) / len(rows)
    rag_recall = sum(r[3] for r in rows) / len(rows)
    report: dict[str, Any] = {
        "k": K,
        "questions": len(rows),
        "knowledge_recall": knowledge_recall,
        "rag_recall": rag_recall,
        "rag_both_files": sum(r[3] == 1.0 for r in rows) / len(rows),
        "per_question": [
            {"question": q_.text, "rank": keys.index(q_.unit) + 1, "knowledge": kr, "rag": rr}
            for q_, keys, kr, rr in rows
        ],
    }
    (tmp_path / "tier3.json").write_text(json.dumps(report, indent=2))
    print(f"\nTier-3 gate (k={K}, {len(rows)} questions, model {MODEL_ID}):")
    print(f"  knowledge arm recall@{K} = {knowledge_recall:.3f}")
    print(f"  RAG arm recall@{K}       = {rag_recall:.3f} (both files: {report['rag_both_files']:.3f})")
    for item in report["per_question"]:
        scores = f"knowledge {item['knowledge']:.1f}  rag {item['rag']:.1f}"
        print(f"  rank {item['rank']}  {scores}  {item['question']}")
    assert knowledge_recall == 1.0


def test_stored_unit_vectors_are_the_models_vectors(arms: dict[str, Arm]) -> None:
    """What ``kb embed`` stored is all-MiniLM-L6-v2's unit-length 384-d vector (the real model ran)."""
    from kb_assets.indexing.embed import texts_of
    from kb_resources.store.embeddings import pending_units
    from kb_resources.store.schema import artifact

    arm = arms["api"]
    with arm.context.store.engine.connect() as conn:
        units = pending_units(conn, arm.sha, "no-such-model")[:4]
        stored = dict(
            conn.execute(
                sa.select(artifact.c.artifact_id, artifact.c.embedding).where(
                    artifact.c.artifact_id.in_([u.artifact_id for u in units]),
                    artifact.c.embedding_model_id == vector_model_id(MODEL_ID),
                )
            ).all()
        )
    fresh = LocalEmbedder().embed(texts_of(units))
    for unit, vector in zip(units, fresh, strict=True):
        kept = [float(x) for x in stored[unit.artifact_id]]
        assert len(kept) == 384
        assert sum(a * b for a, b in zip(kept, vector, strict=True)) == pytest.approx(1.0, abs=1e-4)


MCP_SESSION = """
import json, sys
import anyio
from mcp import Client
from kb_mcp.context import open_context
from kb_mcp.server import build_server
from kb_resources.settings import load_settings

HEAVY = ("torch", "sentence_transformers", "transformers")
context = open_context(sys.argv[1], load_settings())
server = build_server(context)

async def session():
    async with Client(server) as client:
        await client.call_tool("get_knowledge", {"target": "shop.routers.users"})
        await client.call_tool("list_knowledge", {"limit": 5})
        before = [m for m in HEAVY if m in sys.modules]
        found = await client.call_tool("search_knowledge", {"query": "create a user", "k": 3})
        return before, found.structured_content

before, found = anyio.run(session)
after = [m for m in HEAVY if m in sys.modules]
context.close()
print(json.dumps({"before": before, "after": after, "status": found["status"],
                  "keys": [u["logical_key"] for u in found["units"]]}))
"""


def test_mcp_server_loads_the_model_on_its_first_semantic_search(arms: dict[str, Arm]) -> None:
    """Opening the server and answering get_knowledge / list_knowledge imports no torch; the first
    semantic search does (but not the sentence-transformers library), and finds the route."""
    arm = arms["api"]
    env = {**os.environ, **arm.env.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run(
        [sys.executable, "-c", MCP_SESSION, str(arm.repo)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["before"] == []
    assert "torch" in result["after"]
    assert "sentence_transformers" not in result["after"]  # ~10 s of import the search never pays
    assert result["status"] == "ok"
    assert "api:POST /api/v1/users/" in result["keys"]
