"""``artifact_embeddings`` and ``rag_chunks``: the optional, model-backed assets of a commit.

Never part of the index job (``kb embed`` and the ``embed_commit`` job run them). Their
``code_version`` names the embedding model and the text or chunk rule, so switching models or
changing how units are rendered shows up as stale in the UI; their data version names the model
and the ids embedded, so re-running on an embedded commit changes nothing.
"""

import dagster as dg

from kb_assets.core.chunks import CHUNKER_VERSION
from kb_assets.core.embedding_text import TEXT_VERSION
from kb_assets.indexing.embed import embed_snapshot, snapshot_embedding_version
from kb_assets.indexing.rag import chunk_commit, chunks_version
from kb_assets.partitions import commits
from kb_resources.resources import KnowbaseResource


def embedding_assets(model_id: str) -> list[dg.AssetsDefinition]:
    """The two embedding assets, versioned for the configured model ``model_id``."""

    @dg.asset(
        partitions_def=commits,
        deps=["knowledge_snapshot"],
        group_name="embeddings",
        code_version=f"{model_id}/text-v{TEXT_VERSION}",
        kinds={"pytorch", "postgres"},
    )
    def artifact_embeddings(
        context: dg.AssetExecutionContext, kb: KnowbaseResource
    ) -> dg.MaterializeResult[None]:
        """A vector per knowledge unit of the snapshot, for semantic search (only new artifact ids
        are embedded)."""
        embedder = kb.embedder()
        stats = embed_snapshot(kb.engine(), context.partition_key, embedder)
        context.log.info(
            f"{stats.embedded} units embedded, {stats.reused} reused ({stats.texts_per_s:.0f}/s)"
        )
        version = snapshot_embedding_version(kb.engine(), context.partition_key, stats.model_id)
        return dg.MaterializeResult(metadata=stats.metadata(), data_version=dg.DataVersion(version))

    @dg.asset(
        partitions_def=commits,
        deps=["code_spans"],
        group_name="embeddings",
        code_version=f"{model_id}/chunks-v{CHUNKER_VERSION}",
        kinds={"pytorch", "postgres"},
    )
    def rag_chunks(context: dg.AssetExecutionContext, kb: KnowbaseResource) -> dg.MaterializeResult[None]:
        """The RAG baseline: tree-sitter-aware source chunks with their own vectors and no grounding."""
        embedder = kb.embedder()
        stats = chunk_commit(
            kb.git(), kb.engine(), context.partition_key, embedder, max_bytes=kb.max_file_bytes
        )
        version = chunks_version(kb.engine(), context.partition_key, embedder.model_id)
        return dg.MaterializeResult(metadata=stats.metadata(), data_version=dg.DataVersion(version))

    return [artifact_embeddings, rag_chunks]
