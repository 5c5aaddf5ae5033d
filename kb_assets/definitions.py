"""The single Dagster ``Definitions`` of knowbase (``workspace.yaml`` points here)."""

from __future__ import annotations

import dagster as dg

from kb_assets.assets.embeddings import embedding_assets
from kb_assets.assets.extractors import extractor_assets
from kb_assets.assets.ingest import commit_tree
from kb_assets.assets.snapshot import knowledge_snapshot
from kb_assets.assets.spans import code_spans
from kb_assets.jobs import DETERMINISTIC_ASSETS, INDEX_JOB, embed_job, index_job, verify_job
from kb_assets.sensors import branch_sensor, verify_after_index
from kb_gates.checks import all_checks
from kb_gates.oracle_asset import oracle_agreement
from kb_resources.embedding.port import configured_model_id
from kb_resources.resources import KnowbaseResource
from kb_resources.settings import Settings, load_settings

__all__ = ["DETERMINISTIC_ASSETS", "INDEX_JOB", "build_definitions", "defs"]


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
            *embedding_assets(configured_model_id(settings)),
        ],
        asset_checks=all_checks(),
        jobs=[index_job(), verify_job(), embed_job()],
        sensors=[branch_sensor, verify_after_index],
        resources={"kb": KnowbaseResource.from_settings(settings, repo or settings.repo or ".")},
    )


defs = build_definitions(load_settings())
