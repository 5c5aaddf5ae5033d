"""What earlier steps of a commit's run recorded: the metadata of their newest materialization."""

from typing import Any

import dagster as dg


def latest_metadata(
    context: dg.AssetExecutionContext | dg.AssetCheckExecutionContext, asset: str
) -> dict[str, Any]:
    """The metadata of the newest materialization of ``asset`` for this partition."""
    records = context.instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[context.partition_key]), limit=1
    ).records
    if not records or records[0].asset_materialization is None:
        return {}
    return {k: v.value for k, v in records[0].asset_materialization.metadata.items()}


def indexed_base(context: dg.AssetExecutionContext | dg.AssetCheckExecutionContext) -> str | None:
    """The published commit this partition was indexed against (``commit_tree``), None for a full
    index: the checks read a large staged set against it (``kb_resources.store.staged_delta``)."""
    return str(latest_metadata(context, "commit_tree").get("base_sha") or "") or None
