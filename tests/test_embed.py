"""``kb embed``: every unit of a snapshot gets a vector once per model, and the RAG baseline's chunks.

The embedder is the deterministic hashing one, wrapped to count what reaches the model: these tests
are about the plumbing (which ids are embedded, what is stored, idempotence across commits and
runs), not about the model; ``tests/test_tier3_gate.py`` runs the real one.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import sqlalchemy as sa

from kb_assets.core.embedding_text import TEXT_VERSION, vector_model_id
from kb_assets.indexing.embed import embed_snapshot
from kb_assets.indexing.rag import chunk_commit
from kb_resources.embedding.hashing import HashEmbedder, hash_vector
from kb_resources.git.repo import GitRepo
from kb_resources.store import reads
from kb_resources.store.embeddings import embedded_count, snapshot_size
from kb_resources.store.rag_chunks import commit_chunk_ids, nearest_chunks
from kb_resources.store.schema import artifact, rag_chunk
from tests.conftest import PgTestServer
from tests.kbfixtures import KbEnv

pytest_plugins = ["tests.mcpfixtures"]


@dataclass
class CountingEmbedder:
    """The hashing embedder under another model id, recording every text it is asked to embed."""

    model: str = "test/counting-hash"
    calls: list[list[str]] = field(default_factory=list)
    loads: int = 0

    @property
    def model_id(self) -> str:
        return self.model

    @property
    def dim(self) -> int:
        return HashEmbedder().dim

    def load(self) -> None:
        self.loads += 1

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return HashEmbedder().embed(texts)

    @property
    def texts(self) -> int:
        return sum(len(c) for c in self.calls)


@dataclass
class Shop:
    repo: Path
    shas: list[str]
    env: KbEnv
    engine: sa.Engine


@pytest.fixture(scope="module")
def shop(pg_server: PgTestServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shop]:
    """Both commits of ``fixtures/mcp_shop`` indexed into a database of this module (each test
    embeds under model ids of its own, so they do not see each other's vectors)."""
    from tests.mcpfixtures import index_shop  # at run time: the plugin module is imported by pytest

    repo, shas, env, database = index_shop(pg_server, tmp_path_factory.mktemp("embed"))
    engine = sa.create_engine(env.db_url)
    try:
        yield Shop(repo, shas, env, engine)
    finally:
        engine.dispose()
        env.close()
        pg_server.drop_database(database)


def snapshot_ids(engine: sa.Engine, sha: str) -> set[str]:
    with engine.connect() as conn:
        return set(reads.snapshot_artifact_ids(conn, sha))


def test_each_artifact_id_is_embedded_once_per_model(shop: Shop) -> None:
    """Commit 1 embeds all of its units; again, nothing; commit 2 embeds exactly its new ids; another
    model embeds everything again (its vectors replace the first model's)."""
    first, second = shop.shas
    counting = CountingEmbedder()
    stats = embed_snapshot(shop.engine, first, counting, batch=5)
    with shop.engine.connect() as conn:
        size = snapshot_size(conn, first)
        assert size > 5
        assert embedded_count(conn, first, vector_model_id(counting.model_id)) == size
    assert (stats.total, stats.embedded, stats.reused) == (size, size, 0)
    assert counting.texts == size
    assert all(len(c) <= 5 for c in counting.calls)
    assert counting.loads == 1

    again = embed_snapshot(shop.engine, first, counting)
    assert (again.embedded, again.reused) == (0, size)
    assert counting.texts == size, "an embedded artifact id reached the model again"

    new_ids = snapshot_ids(shop.engine, second) - snapshot_ids(shop.engine, first)
    assert new_ids
    before = counting.texts
    embed_snapshot(shop.engine, second, counting)
    assert counting.texts - before == len(new_ids)
    with shop.engine.connect() as conn:
        assert embedded_count(conn, second, vector_model_id(counting.model_id)) == snapshot_size(conn, second)

    other = CountingEmbedder(model="test/other-model")
    embed_snapshot(shop.engine, first, other)
    assert other.texts == size
    with shop.engine.connect() as conn:
        assert embedded_count(conn, first, vector_model_id(counting.model_id)) == 0
        assert reads.embedding_model(conn, first) == vector_model_id("test/other-model")


def test_stored_vectors_are_the_embedders_vectors_of_the_unit_texts(shop: Shop) -> None:
    """What is stored under an artifact id is the model's vector of that unit's text, unit length."""
    head = shop.shas[-1]
    counting = CountingEmbedder(model="test/stored-vectors")
    embed_snapshot(shop.engine, head, counting)
    texts = [t for call in counting.calls for t in call]
    with shop.engine.connect() as conn:
        rows = conn.execute(
            sa.select(artifact.c.logical_key, artifact.c.embedding).where(
                artifact.c.embedding_model_id == vector_model_id(counting.model_id)
            )
        ).all()
    assert len(rows) == len(texts)
    by_key = {key: vector for key, vector in rows}
    for text in texts:
        key = text.splitlines()[0].split(" ", 2)[-1]
        stored = [float(x) for x in by_key[key]]
        assert stored == pytest.approx(hash_vector(text), abs=1e-6)
        assert sum(x * x for x in stored) == pytest.approx(1.0, abs=1e-5)


def test_kb_embed_cli_reports_and_is_idempotent(shop: Shop) -> None:
    """``kb embed`` (hash provider) embeds the newest commit, then reuses everything; ``--rag`` adds
    the source chunks; a bad provider is a one-line input error."""
    shop.env.extra["KB_EMBED_PROVIDER"] = "hash"
    first = shop.env.kb("embed", shop.repo, "--rag")
    assert first.code == 0, first.stderr
    lines = first.stdout.splitlines()
    assert lines[0].startswith(f"embedded {shop.shas[-1][:12]} with knowbase/hash-v1#text-v{TEXT_VERSION}: ")
    assert " reused)" in lines[0]
    assert "0 reused" in lines[0]
    assert lines[1].startswith(f"rag chunks {shop.shas[-1][:12]}: ")
    second = shop.env.kb("embed", shop.repo, "--rag")
    assert second.code == 0, second.stderr
    assert "(0 embedded," in second.stdout.splitlines()[0]
    assert "(0 embedded)" in second.stdout.splitlines()[1]
    with shop.engine.connect() as conn:
        assert embedded_count(conn, shop.shas[-1], vector_model_id("knowbase/hash-v1")) == snapshot_size(
            conn, shop.shas[-1]
        )

    shop.env.extra["KB_EMBED_PROVIDER"] = "nonsense"
    bad = shop.env.kb("embed", shop.repo)
    assert bad.code == 2
    assert "KB_EMBED_PROVIDER must be one of local, openai, hash" in bad.stderr


def test_rag_chunks_are_per_blob_and_never_embedded_twice(shop: Shop) -> None:
    """Commit 1's Python blobs are chunked; a rerun sends nothing to the model; commit 2 chunks only
    the blobs it changed; nearest chunks are found at the commit's paths."""
    first, second = shop.shas
    repo = GitRepo.open(shop.repo)
    counting = CountingEmbedder(model="test/rag")
    stats = chunk_commit(repo, shop.engine, first, counting, max_bytes=1_000_000)
    assert stats.files == 4
    assert stats.chunks.embedded == counting.texts > 0
    with shop.engine.connect() as conn:
        stored = conn.execute(
            sa.select(sa.func.count()).where(rag_chunk.c.embedding_model_id == counting.model_id)
        ).scalar_one()
    assert stored == counting.texts

    rerun = chunk_commit(repo, shop.engine, first, counting, max_bytes=1_000_000)
    assert rerun.chunks.embedded == 0
    assert counting.texts == stored

    with shop.engine.connect() as conn:
        old = {(f.path, f.blob_id) for f in reads.commit_files(conn, first)}
        changed = {f.path for f in reads.commit_files(conn, second) if (f.path, f.blob_id) not in old}
    assert changed == {"shop/api.py", "shop/orders.py", "shop/tax.py"}
    before = len(counting.calls)
    later = chunk_commit(repo, shop.engine, second, counting, max_bytes=1_000_000)
    assert later.chunked == len(changed)
    sent = [t for call in counting.calls[before:] for t in call]
    assert any("def with_tax" in t for t in sent)
    assert not any("def apply_discount" in t for t in sent), "an unchanged blob was chunked again"

    with shop.engine.connect() as conn:
        assert len(commit_chunk_ids(conn, second, counting.model_id)) == later.chunks.total
        hits = nearest_chunks(conn, second, counting.model_id, hash_vector("with tax amount rate"), 3)
    assert hits[0].path == "shop/tax.py"
    assert "def with_tax" in hits[0].content
