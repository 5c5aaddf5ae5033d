"""The single Dagster ``Definitions`` of knowbase (``workspace.yaml`` points here)."""

from __future__ import annotations

import dagster as dg

from kb_assets.assets.embeddings import embedding_assets
from kb_assets.assets.extractors import extractor_assets
from kb_assets.assets.ingest import commit_tree
from kb_assets.assets.model_passes import decisions, descriptions
from kb_assets.assets.snapshot import knowledge_snapshot
from kb_assets.assets.spans import code_spans
from kb_assets.jobs import (
    DETERMINISTIC_ASSETS,
    INDEX_JOB,
    INDEX_MULTIPROCESS_JOB,
    embed_job,
    index_job,
    index_multiprocess_job,
    model_jobs,
    verify_job,
)
from kb_assets.sensors import branch_sensor, verify_after_index
from kb_gates.checks import all_checks
from kb_gates.model_checks import model_checks
from kb_gates.oracle_asset import oracle_agreement
from kb_resources.embedding.port import configured_model_id
from kb_resources.llm.resource import LlmResource
from kb_resources.resources import KnowbaseResource
from kb_resources.settings import Settings, load_settings

__all__ = ["DETERMINISTIC_ASSETS", "INDEX_JOB", "build_definitions", "defs", "multiprocess_index_job"]


def build_definitions(settings: Settings, repo: str | None = None) -> dg.Definitions:
    """Assets, checks, resources, the index job and the branch sensor for ``repo``
    (default: ``KB_REPO`` or the current directory)."""
    return dg.Definitions(
        assets=[
            commit_tree,
            code_spans,
            *extractor_assets,
            knowledge_snapshot,
            oracle_agreement,
            descriptions,
            decisions,
            *embedding_assets(configured_model_id(settings)),
        ],
        asset_checks=[*all_checks(), *model_checks()],
        jobs=[index_job(), index_multiprocess_job(), verify_job(), *model_jobs(), embed_job()],
        sensors=[branch_sensor, verify_after_index],
        resources={
            "kb": KnowbaseResource.from_settings(settings, repo or settings.repo or "."),
            "llm": LlmResource.from_settings(settings),
        },
    )


defs = build_definitions(load_settings())


def multiprocess_index_job() -> dg.JobDefinition:
    """The multiprocess index job of ``defs``, for ``dg.reconstructable``: each step's process
    imports this module and rebuilds the same Definitions from the environment (``KB_REPO``,
    ``KB_DB_URL``), which is all a remote executor needs too."""
    return defs.resolve_job_def(INDEX_MULTIPROCESS_JOB)
