"""``passed_on_newest`` on a real (ephemeral) Dagster instance: a check vouches for a partition
only while its newest evaluation passed on the newest materialization of its asset there."""

from __future__ import annotations

import dagster as dg

from kb_assets.assets.evaluations import passed_on_newest

PARTS = dg.StaticPartitionsDefinition(["p", "q"])
VERDICT = {"passed": True}


@dg.asset(partitions_def=PARTS)
def thing() -> None:
    """A partitioned asset with nothing in it."""


@dg.asset_check(asset=thing, partitions_def=PARTS)
def sound() -> dg.AssetCheckResult:
    """Passes or fails as the test says."""
    return dg.AssetCheckResult(passed=VERDICT["passed"])


def _run(instance: dg.DagsterInstance, partition: str, *, checked: bool = True) -> None:
    selection = dg.AssetSelection.assets(thing)
    result = dg.materialize(
        [thing, sound],
        instance=instance,
        partition_key=partition,
        selection=selection if checked else selection.without_checks(),
    )
    assert result.success


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
