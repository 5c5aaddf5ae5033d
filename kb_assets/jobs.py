"""The index job: which assets one commit's run materializes, and its run config.

Kept apart from ``definitions`` so the sensor, the CLI runner and the Definitions share one
description of "index a commit" without importing each other.
"""

from __future__ import annotations

from typing import Any

import dagster as dg

from kb_assets.core.extractors.registry import EXTRACTORS

INDEX_JOB = "index_commit"

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


def index_job() -> dg.UnresolvedAssetJobDefinition:
    """Index one commit: ingest, parse, every deterministic extractor, publish (with their checks)."""
    return dg.define_asset_job(
        INDEX_JOB,
        selection=dg.AssetSelection.assets(*DETERMINISTIC_ASSETS),
        description="Index one commit: ingest, parse, every deterministic extractor, publish.",
        executor_def=dg.in_process_executor,
    )
