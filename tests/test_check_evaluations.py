"""``passed_on_newest`` on a real (ephemeral) Dagster instance: a check vouches for a partition
only while its newest evaluation passed on the newest materialization of its asset there. And
``newest_evaluations``, one query for many checks, answers what ``newest_evaluation`` answers for
each, also when a check's newest record is no evaluation (its run failed before it)."""

from __future__ import annotations

import dagster as dg
from dagster._core.event_api import PartitionKeyFilter
from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus

from kb_assets.assets.evaluations import newest_evaluation, newest_evaluations, passed_on_newest

PARTS = dg.StaticPartitionsDefinition(["p", "q"])
VERDICT = {"passed": True, "raises": False}


@dg.asset(partitions_def=PARTS)
def thing() -> None:
    """A partitioned asset with nothing in it."""


@dg.asset_check(asset=thing, partitions_def=PARTS)
def sound() -> dg.AssetCheckResult:
    """Passes or fails as the test says."""
    if VERDICT["raises"]:
        raise RuntimeError("the check cannot conclude")
    return dg.AssetCheckResult(passed=VERDICT["passed"])


@dg.asset_check(asset=thing, partitions_def=PARTS)
def steady() -> dg.AssetCheckResult:
    """Always passes."""
    return dg.AssetCheckResult(passed=True)


def _run(instance: dg.DagsterInstance, partition: str, *, checked: bool = True) -> None:
    selection = dg.AssetSelection.assets(thing)
    result = dg.materialize(
        [thing, sound, steady],
        instance=instance,
        partition_key=partition,
        selection=selection if checked else selection.without_checks(),
        raise_on_error=False,
    )
    assert result.success is not VERDICT["raises"]


def test_a_check_vouches_only_for_the_materialization_it_passed_on() -> None:
    """Never evaluated: no. Passed on the newest: yes, for that partition only. Re-materialized
    without the check, or failed: no. Passed again: yes."""
    key = dg.AssetCheckKey(thing.key, "sound")
    with dg.DagsterInstance.ephemeral() as instance:
        assert not passed_on_newest(instance, key, "p")
        VERDICT["passed"] = True
        _run(instance, "p")
        assert passed_on_newest(instance, key, "p")
        assert not passed_on_newest(instance, key, "q")
        _run(instance, "p", checked=False)
        assert not passed_on_newest(instance, key, "p")
        VERDICT["passed"] = False
        _run(instance, "p")
        assert not passed_on_newest(instance, key, "p")
        VERDICT["passed"] = True
        _run(instance, "p")
        assert passed_on_newest(instance, key, "p")


def test_many_checks_read_at_once_answer_as_each_read_alone() -> None:
    """Never evaluated, evaluated, failed, then a run whose check raised (its newest record is
    only planned): at each point and for each partition, the batched read equals the single ones."""
    keys = [dg.AssetCheckKey(thing.key, "sound"), dg.AssetCheckKey(thing.key, "steady")]
    seen: list[object] = []

    def agree(instance: dg.DagsterInstance) -> None:
        for partition in ("p", "q"):
            alone = {key: newest_evaluation(instance, key, partition) for key in keys}
            assert newest_evaluations(instance, keys, partition) == alone
            evaluation = alone[keys[0]]
            seen.append(evaluation.passed if evaluation is not None else None)

    with dg.DagsterInstance.ephemeral() as instance:
        agree(instance)
        VERDICT.update(passed=True, raises=False)
        _run(instance, "p")
        agree(instance)
        VERDICT["passed"] = False
        _run(instance, "p")
        agree(instance)
        VERDICT["raises"] = True
        try:
            _run(instance, "p")
        finally:
            VERDICT.update(passed=True, raises=False)
        newest = instance.event_log_storage.get_latest_asset_check_execution_by_key(
            keys, partition_filter=PartitionKeyFilter(key="p")
        )
        assert newest[keys[0]].status is not AssetCheckExecutionRecordStatus.FAILED
        assert newest[keys[0]].status is not AssetCheckExecutionRecordStatus.SUCCEEDED
        agree(instance)
    assert seen == [None, None, True, None, False, None, False, None]
