"""``oracle_agreement``: how a commit's knowledge agrees with independent tools' own view of it.

An asset (downstream of the snapshot) rather than checks on the extractor assets, so that it runs
in its own job (``verify_commit``): the oracles export the tree and run grimp and griffe in
subprocesses, which on a large repository costs more than indexing it. Its two checks are the
oracle gates; an oracle that cannot analyse the commit at all yields a WARN, not a failure.
"""

from typing import Any

import dagster as dg

from kb_assets.assets.launched import adopt_launched_run
from kb_assets.partitions import commits
from kb_gates import gates
from kb_gates.checks import oracle_unavailable
from kb_gates.metrics import SetDiff
from kb_resources.resources import KnowbaseResource

ASSET = "oracle_agreement"


def _check(name: str, oracle: str, diff: SetDiff[object] | Exception) -> dg.AssetCheckResult:
    if isinstance(diff, Exception):
        result = oracle_unavailable(oracle, diff)
        return dg.AssetCheckResult(
            check_name=name, passed=False, severity=result.severity, metadata=dict(result.metadata)
        )
    metadata: dict[str, Any] = {
        "evidence": "\n".join(diff.evidence()) or "none",
        "matched": diff.matched,
        "missing": len(diff.missing),
        "extra": len(diff.extra),
    }
    return dg.AssetCheckResult(check_name=name, passed=diff.equal, metadata=metadata)


def _reproduced(diffs: dict[str, SetDiff[str]]) -> dg.AssetCheckResult:
    """One result for every extractor's recomputation (on a large commit the blocking
    ``ids_reproducible`` checks only a stored sample, so this is where the whole is proved)."""
    evidence = [f"{name}: {line}" for name, diff in sorted(diffs.items()) for line in diff.evidence(5)]
    metadata: dict[str, Any] = {
        "evidence": "\n".join(evidence[:20]) or "none",
        "matched": sum(d.matched for d in diffs.values()),
        "differing_extractors": ", ".join(sorted(n for n, d in diffs.items() if not d.equal)) or "none",
    }
    passed = all(d.equal for d in diffs.values())
    return dg.AssetCheckResult(check_name="extractions_reproducible", passed=passed, metadata=metadata)


def _run(compute: object, *args: object) -> SetDiff[object] | Exception:
    try:
        return compute(*args)  # type: ignore[operator, no-any-return]
    except Exception as err:  # the oracle itself failed: not evidence against the extractor
        return err


@dg.asset(
    name=ASSET,
    partitions_def=commits,
    deps=["knowledge_snapshot"],
    group_name="verification",
    code_version="1",
    kinds={"python"},
    check_specs=[
        dg.AssetCheckSpec("matches_grimp", asset=ASSET, description="import edges equal grimp's graph"),
        dg.AssetCheckSpec("matches_griffe", asset=ASSET, description="public surface equals griffe's view"),
        dg.AssetCheckSpec(
            "extractions_reproducible",
            asset=ASSET,
            description="every extractor, recomputed from a fresh load, stages the identical ids",
        ),
    ],
)
def oracle_agreement(context: dg.AssetExecutionContext, kb: KnowbaseResource) -> dg.MaterializeResult:  # type: ignore[type-arg]  # Dagster reads a subscripted annotation as several outputs
    """Agreement of the commit's import edges with grimp and of its public API with griffe."""
    adopt_launched_run(context)
    sha = context.partition_key
    grimp = _run(gates.grimp_diff, kb.git(), kb.engine(), sha)
    griffe = _run(gates.public_api_diff, kb.git(), kb.engine(), sha)
    reproduced = gates.extractions_diff(kb.git(), kb.engine(), sha, limits=kb.limits(), workers=kb.workers)
    checks = [
        _check("matches_grimp", "grimp", grimp),
        _check("matches_griffe", "griffe", griffe),
        _reproduced(reproduced),
    ]
    metadata: dict[str, object] = {}
    for oracle, diff in (("grimp", grimp), ("griffe", griffe)):
        if not isinstance(diff, Exception):
            metadata[f"{oracle}_precision"] = round(diff.precision, 4)
            metadata[f"{oracle}_recall"] = round(diff.recall, 4)
    return dg.MaterializeResult(metadata=metadata, check_results=checks)  # type: ignore[arg-type]
