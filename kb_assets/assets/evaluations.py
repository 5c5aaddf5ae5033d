"""What Dagster's event log holds for one asset or check at one partition: the newest evaluation
of a check, a materialization, the data version it recorded. Shared by the snapshot guard
(``proof``) and the checks that read against a proven base (``kb_gates.checks``).

Three names come from Dagster's private modules (the data-version tag, the partition filter and
the execution statuses of check records): the public API has no per-partition check history. The
Dagster trio is pinned (STACK.md), and ``tests/test_snapshot_proof.py`` fails if they move."""

from __future__ import annotations

from collections.abc import Sequence

import dagster as dg
from dagster._core.definitions.data_version import DATA_VERSION_TAG
from dagster._core.event_api import PartitionKeyFilter
from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus

_EVALUATED = {AssetCheckExecutionRecordStatus.SUCCEEDED, AssetCheckExecutionRecordStatus.FAILED}


def newest_evaluation(
    instance: dg.DagsterInstance, key: dg.AssetCheckKey, partition: str
) -> dg.AssetCheckEvaluation | None:
    """The newest finished evaluation of check ``key`` at ``partition`` (None if it never ran)."""
    records = instance.event_log_storage.get_asset_check_execution_history(
        key, limit=1, status=_EVALUATED, partition_filter=PartitionKeyFilter(key=partition)
    )
    return records[0].evaluation if records else None


def newest_evaluations(
    instance: dg.DagsterInstance, keys: Sequence[dg.AssetCheckKey], partition: str
) -> dict[dg.AssetCheckKey, dg.AssetCheckEvaluation | None]:
    """``newest_evaluation`` of each of ``keys``, from one query for the newest record of every
    check: one query per check took the snapshot's guard ~30 ms of each Django commit (23 blocking
    checks; ~7 ms so). A check whose newest record is not an evaluation (planned in a run that then failed,
    or skipped) is asked again on its own."""
    newest = instance.event_log_storage.get_latest_asset_check_execution_by_key(
        keys, partition_filter=PartitionKeyFilter(key=partition)
    )
    found: dict[dg.AssetCheckKey, dg.AssetCheckEvaluation | None] = {}
    for key in keys:
        record = newest.get(key)
        if record is None or record.status in _EVALUATED:
            found[key] = record.evaluation if record is not None else None
        else:
            found[key] = newest_evaluation(instance, key, partition)
    return found


def materialization(
    instance: dg.DagsterInstance, asset: dg.AssetKey, partition: str, *, at: int | None = None
) -> dg.EventLogRecord | None:
    """The newest materialization of ``asset`` at ``partition``, or the one stored as ``at``."""
    wanted = dg.AssetRecordsFilter(
        asset_key=asset,
        asset_partitions=[partition],
        after_storage_id=None if at is None else at - 1,
        before_storage_id=None if at is None else at + 1,
    )
    found = instance.fetch_materializations(wanted, limit=1).records
    return found[0] if found else None


def data_version(record: dg.EventLogRecord | None) -> str | None:
    """The data version a materialization recorded (the digest of what its asset holds)."""
    event = record.asset_materialization if record is not None else None
    if event is None or not event.tags:
        return None
    return event.tags.get(DATA_VERSION_TAG)


def passed_on_newest(instance: dg.DagsterInstance, key: dg.AssetCheckKey, partition: str) -> bool:
    """Whether the newest evaluation of ``key`` at ``partition`` passed, and on the newest
    materialization of its asset there (not on one that was replaced since)."""
    evaluation = newest_evaluation(instance, key, partition)
    if evaluation is None or not evaluation.passed:
        return False
    target = evaluation.target_materialization_data
    latest = materialization(instance, key.asset_key, partition)
    return target is not None and latest is not None and target.storage_id == latest.storage_id
