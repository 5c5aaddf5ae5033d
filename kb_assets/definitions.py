"""The single Dagster ``Definitions`` of knowbase (``workspace.yaml`` points here)."""

from __future__ import annotations

import dagster as dg

from kb_assets.assets.extractors import extractor_assets
from kb_assets.assets.ingest import commit_tree
from kb_assets.assets.snapshot import knowledge_snapshot
from kb_assets.assets.spans import code_spans
from kb_gates.checks import all_checks
from kb_resources.resources import KnowbaseResource
from kb_resources.settings import Settings, load_settings

INDEX_JOB = "index_commit"

DETERMINISTIC_ASSETS = [
    "commit_tree",
    "code_spans",
    *(a.key.path[-1] for a in extractor_assets),
    "knowledge_snapshot",
]


def build_definitions(settings: Settings, repo: str | None = None) -> dg.Definitions:
    """Assets, checks, resources and jobs for indexing ``repo`` (default: ``KB_REPO`` or the cwd)."""
    index_job = dg.define_asset_job(
        INDEX_JOB,
        selection=dg.AssetSelection.assets(*DETERMINISTIC_ASSETS),
        description="Index one commit: ingest, parse, every deterministic extractor, publish.",
        executor_def=dg.in_process_executor,
    )
    return dg.Definitions(
        assets=[commit_tree, code_spans, *extractor_assets, knowledge_snapshot],
        asset_checks=all_checks(),
        jobs=[index_job],
        resources={"kb": KnowbaseResource.from_settings(settings, repo or settings.repo or ".")},
    )


defs = build_definitions(load_settings())
