"""What Dagster's event log says about the blocking checks upstream of a commit's snapshot
(the decision is ``kb_assets.core.proof``).

Three names come from Dagster's private modules (the data-version tag, the partition filter and
the execution statuses of check records): the public API has no per-partition check history. The
Dagster trio is pinned (STACK.md), and ``tests/test_snapshot_proof.py`` fails if they move."""

from __future__ import annotations

import dagster as dg
from dagster._core.definitions.data_version import DATA_VERSION_TAG
from dagster._core.event_api import PartitionKeyFilter
from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus

from kb_assets.core.errors import UnprovenSnapshotError
from kb_assets.core.proof import CheckEvidence, unproven
from kb_gates.checks import blocking_check_keys

_EVALUATED = {AssetCheckExecutionRecordStatus.SUCCEEDED, AssetCheckExecutionRecordStatus.FAILED}


def require_proven(context: dg.AssetExecutionContext) -> None:
    """Raise ``UnprovenSnapshotError`` unless every blocking check of the Definitions passed on the
    staged data its asset now holds at this partition. The list comes from the gates, not from the
    run: a run of the snapshot alone holds none of them."""
    checks = blocking_check_keys()
    current = {key: _materialization(context, key) for key in {k.asset_key for k in checks}}
    evidence = [_evidence(context, key, current[key.asset_key]) for key in checks]
    versions = {key.to_user_string(): _version(record) for key, record in current.items()}
    missing = unproven(evidence, versions)
    if missing:
        raise UnprovenSnapshotError(context.partition_key, missing)


def _evidence(
    context: dg.AssetExecutionContext, key: dg.AssetCheckKey, latest: dg.EventLogRecord | None
) -> CheckEvidence:
    """The newest evaluation of one check at this partition, with the data version it checked."""
    records = context.instance.event_log_storage.get_asset_check_execution_history(
        key, limit=1, status=_EVALUATED, partition_filter=PartitionKeyFilter(key=context.partition_key)
    )
    evaluation = records[0].evaluation if records else None
    asset, name = key.asset_key.to_user_string(), key.name
    if evaluation is None:
        return CheckEvidence(asset, name, None, None)
    target = evaluation.target_materialization_data
    checked = None
    if target is not None:
        if latest is not None and target.storage_id == latest.storage_id:
            checked = _version(latest)
        else:
            checked = _version(_materialization(context, key.asset_key, at=target.storage_id))
    return CheckEvidence(asset, name, evaluation.passed, checked)


def _materialization(
    context: dg.AssetExecutionContext, asset: dg.AssetKey, *, at: int | None = None
) -> dg.EventLogRecord | None:
    """The newest materialization of ``asset`` at this partition, or the one stored as ``at``."""
    wanted = dg.AssetRecordsFilter(
        asset_key=asset,
        asset_partitions=[context.partition_key],
        after_storage_id=None if at is None else at - 1,
        before_storage_id=None if at is None else at + 1,
    )
    found = context.instance.fetch_materializations(wanted, limit=1).records
    return found[0] if found else None


def _version(record: dg.EventLogRecord | None) -> str | None:
    """The data version a materialization recorded (the digest of what its asset staged)."""
    materialization = record.asset_materialization if record is not None else None
    if materialization is None or not materialization.tags:
        return None
    return materialization.tags.get(DATA_VERSION_TAG)
