"""The jobs of one commit: index it, and verify it against the independent oracles.

Indexing materializes the deterministic assets with their invariant checks (the blocking ones
stop the snapshot). The oracle checks — knowbase's edges and surface against grimp's and griffe's
own view of the commit — export the tree and run other tools, which costs more than indexing a
large repository, and so does recomputing every extractor to prove its ids reproducible (on a
large commit the blocking check proves it on a stored sample only), so they live in their own
job: ``kb index`` runs it inline for small commits (or with ``--verify``), ``kb verify`` runs it
on demand, and the ``verify_after_index`` sensor runs it after every index run launched from
Dagster.

Kept apart from ``definitions`` so the sensors, the CLI runner and the Definitions share one
description of these jobs without importing each other.
"""

from __future__ import annotations

from typing import Any

import dagster as dg

from kb_assets.core.extractors.registry import EXTRACTORS

INDEX_JOB = "index_commit"
INDEX_MULTIPROCESS_JOB = "index_commit_multiprocess"
"""The same assets and checks as ``INDEX_JOB``, each step in its own process (``kb index
--executor multiprocess``; the pattern for Celery/Kubernetes executors against a shared store)."""
VERIFY_JOB = "verify_commit"
DESCRIBE_JOB = "describe_commit"
MINE_JOB = "mine_history"

MODEL_ASSETS = {DESCRIBE_JOB: "descriptions", MINE_JOB: "decisions"}
"""The model-backed asset each model job materializes (never part of ``INDEX_JOB``)."""

ORACLE_ASSET = "oracle_agreement"
"""The asset whose checks compare the commit with grimp and griffe; built by ``VERIFY_JOB`` only."""

DETERMINISTIC_ASSETS = [
    "commit_tree",
    "code_spans",
    *(ex.asset_name for ex in EXTRACTORS),
    "knowledge_snapshot",
]


def index_config(parent: str | None = None, full: bool = False) -> dict[str, Any]:
    """Run config of the index job (quiet console logging; the base choice for two assets)."""
    return {
        "ops": {
            op: {"config": {"parent": parent or "", "full": full}} for op in ("commit_tree", "code_spans")
        },
        "loggers": {"console": {"config": {"log_level": "CRITICAL"}}},
    }


def _index_job() -> dg.UnresolvedAssetJobDefinition:
    """Index one commit: ingest, parse, every deterministic extractor, publish (with their checks)."""
    return dg.define_asset_job(
        INDEX_JOB,
        selection=dg.AssetSelection.assets(*DETERMINISTIC_ASSETS),
        description="Index one commit: ingest, parse, every deterministic extractor, publish.",
        executor_def=dg.in_process_executor,
    )


def _index_multiprocess_job() -> dg.UnresolvedAssetJobDefinition:
    """``INDEX_JOB`` under Dagster's multiprocess executor: independent extractors run at once."""
    return dg.define_asset_job(
        INDEX_MULTIPROCESS_JOB,
        selection=dg.AssetSelection.assets(*DETERMINISTIC_ASSETS),
        description="Index one commit with every step in its own process (scale-out shape).",
        executor_def=dg.multiprocess_executor,
    )


def _verify_job() -> dg.UnresolvedAssetJobDefinition:
    """Verify one indexed commit against the independent oracles (grimp, griffe)."""
    return dg.define_asset_job(
        VERIFY_JOB,
        selection=dg.AssetSelection.assets(ORACLE_ASSET),
        description="Compare the commit's knowledge with grimp's and griffe's own view of it.",
        executor_def=dg.in_process_executor,
    )


def _model_job(name: str, description: str) -> dg.UnresolvedAssetJobDefinition:
    """A job materializing one model-backed asset of a commit (its own job: never on ``kb index``)."""
    return dg.define_asset_job(
        name,
        selection=dg.AssetSelection.assets(MODEL_ASSETS[name]),
        description=description,
        executor_def=dg.in_process_executor,
    )


def model_config(job: str, config: dict[str, Any]) -> dict[str, Any]:
    """Run config of a model job: the asset's config, quiet console logging."""
    return {"ops": {MODEL_ASSETS[job]: {"config": config}}, **quiet_config()}


def quiet_config() -> dict[str, Any]:
    """Run config that keeps Dagster's console logger quiet (the CLI prints its own summary)."""
    return {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


_INDEX = _index_job()
_INDEX_MULTIPROCESS = _index_multiprocess_job()
_VERIFY = _verify_job()
_MODEL_JOBS = (
    _model_job(DESCRIBE_JOB, "Describe one indexed commit's targets with a model (claims checked)."),
    _model_job(MINE_JOB, "Mine decisions from the history behind one indexed commit with a model."),
)


def index_job() -> dg.UnresolvedAssetJobDefinition:
    """The one index job object (Dagster refuses two job objects of one name)."""
    return _INDEX


def index_multiprocess_job() -> dg.UnresolvedAssetJobDefinition:
    """The one multiprocess index job object."""
    return _INDEX_MULTIPROCESS


def verify_job() -> dg.UnresolvedAssetJobDefinition:
    """The one verify job object."""
    return _VERIFY


def model_jobs() -> tuple[dg.UnresolvedAssetJobDefinition, ...]:
    """The describe and mine jobs."""
    return _MODEL_JOBS


EMBED_JOB = "embed_commit"
EMBED_ASSETS = ("artifact_embeddings", "rag_chunks")
"""The model-backed assets of a commit (``kb embed``; ``--rag`` adds the second); never indexed."""

_EMBED = dg.define_asset_job(
    EMBED_JOB,
    selection=dg.AssetSelection.assets(*EMBED_ASSETS),
    description="Embed one indexed commit: a vector per knowledge unit, and the RAG baseline's chunks.",
    executor_def=dg.in_process_executor,
)


def embed_job() -> dg.UnresolvedAssetJobDefinition:
    """The one embed job object."""
    return _EMBED
