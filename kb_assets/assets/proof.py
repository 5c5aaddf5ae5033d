"""What Dagster's event log says about the blocking checks upstream of a commit's snapshot
(the decision is ``kb_assets.core.proof``; the event-log reads are ``evaluations``)."""

from __future__ import annotations

import dagster as dg

from kb_assets.assets.evaluations import data_version, materialization, newest_evaluations
from kb_assets.core.errors import UnprovenSnapshotError
from kb_assets.core.proof import CheckEvidence, unproven
from kb_gates.checks import blocking_check_keys


def require_proven(context: dg.AssetExecutionContext) -> None:
    """Raise ``UnprovenSnapshotError`` unless every blocking check of the Definitions passed on the
    staged data its asset now holds at this partition. The list comes from the gates, not from the
    run: a run of the snapshot alone holds none of them."""
    checks = blocking_check_keys()
    partition = context.partition_key
    assets = {k.asset_key for k in checks}
    current = {key: materialization(context.instance, key, partition) for key in assets}
    evaluations = newest_evaluations(context.instance, checks, partition)
    evidence = [_evidence(context, key, evaluations[key], current[key.asset_key]) for key in checks]
    versions = {key.to_user_string(): data_version(record) for key, record in current.items()}
    missing = unproven(evidence, versions)
    if missing:
        raise UnprovenSnapshotError(partition, missing)


def _evidence(
    context: dg.AssetExecutionContext,
    key: dg.AssetCheckKey,
    evaluation: dg.AssetCheckEvaluation | None,
    latest: dg.EventLogRecord | None,
) -> CheckEvidence:
    """The newest evaluation of one check at this partition, with the data version it checked."""
    asset, name = key.asset_key.to_user_string(), key.name
    if evaluation is None:
        return CheckEvidence(asset, name, None, None)
    target = evaluation.target_materialization_data
    checked = None
    if target is not None:
        if latest is not None and target.storage_id == latest.storage_id:
            checked = data_version(latest)
        else:
            at = materialization(context.instance, key.asset_key, context.partition_key, at=target.storage_id)
            checked = data_version(at)
    return CheckEvidence(asset, name, evaluation.passed, checked)
