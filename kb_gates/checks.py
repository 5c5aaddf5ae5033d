"""The gates as Dagster asset checks, generated per extractor asset plus the snapshot checks.

Blocking checks sit on the extractor assets and ``code_spans``: when one fails, the snapshot of
that commit is not published. Oracle checks compare with independent tools (grimp) on every
commit of every repository.
"""

import functools

import dagster as dg

from kb_assets.assets.evaluations import passed_on_newest
from kb_assets.assets.metadata import indexed_base
from kb_assets.core.extractors.base import Extractor
from kb_assets.core.extractors.registry import EXTRACTORS
from kb_assets.partitions import commits
from kb_gates import gates, history
from kb_gates.frames import ARTIFACT_FRAME, SPAN_FRAME, validation_errors
from kb_resources.resources import KnowbaseResource

STORED_ID_SAMPLE = 2000
"""Staged records per extractor whose ids ``ids_reproducible`` recomputes on a large commit."""


def _result(passed: bool, evidence: list[str], **metadata: object) -> dg.AssetCheckResult:
    meta: dict[str, object] = {"evidence": "\n".join(evidence[:20]) or "none", **metadata}
    return dg.AssetCheckResult(passed=passed, metadata=meta)  # type: ignore[arg-type]


def oracle_unavailable(oracle: str, err: Exception) -> dg.AssetCheckResult:
    """A WARN result when the independent tool could not analyse the commit at all."""
    reason = f"{oracle} could not analyse this commit: {type(err).__name__}: {err}"[:500]
    return dg.AssetCheckResult(
        passed=False, severity=dg.AssetCheckSeverity.WARN, metadata={"evidence": reason, "oracle": oracle}
    )


def extractor_checks(extractor: Extractor) -> list[dg.AssetChecksDefinition]:
    """Blocking invariant checks on one extractor's asset. A large staged set indexed against a
    published base is read against it: only what the base's snapshot does not prove is checked
    (``since`` in the metadata; ``kb_resources.store.staged_delta``); the grounded check only
    while few files changed (``reads.grounded_base``)."""

    def since(context: dg.AssetCheckExecutionContext, kb: KnowbaseResource) -> str | None:
        base = indexed_base(context)
        return gates.delta_since(kb.engine(), context.partition_key, extractor.extractor_id, base)

    @dg.asset_check(
        asset=extractor.asset_name, name="every_artifact_grounded", blocking=True, partitions_def=commits
    )
    def grounded(context: dg.AssetCheckExecutionContext, kb: KnowbaseResource) -> dg.AssetCheckResult:
        """Every staged artifact has at least one grounding row pointing at a span occurrence of the
        commit."""
        sha, extractor_id = context.partition_key, extractor.extractor_id
        base = gates.grounded_since(kb.engine(), sha, extractor_id, indexed_base(context))
        bad = gates.ungrounded(kb.engine(), sha, extractor_id, since=base)
        return _result(not bad, bad, ungrounded=len(bad), since=base or "none")

    @dg.asset_check(
        asset=extractor.asset_name, name="ids_reproducible", blocking=True, partitions_def=commits
    )
    def reproducible(context: dg.AssetCheckExecutionContext, kb: KnowbaseResource) -> dg.AssetCheckResult:
        """The staged ids are reproducible: recomputing the extractor from a fresh load yields the
        identical ids (commits of up to KB_VERIFY_MAX_FILES files); above that, the ids of a
        sample of the staged records recompute from what was stored, and the full recomputation
        runs in ``verify_commit`` (check ``extractions_reproducible``)."""
        found = gates.ids_reproducibility(
            kb.git(),
            kb.engine(),
            context.partition_key,
            extractor,
            limits=kb.limits(),
            workers=kb.workers,
            max_files=kb.verify_max_files,
            sample=STORED_ID_SAMPLE,
            base=indexed_base(context),
        )
        diff = found.diff
        return _result(
            diff.equal, diff.evidence(), matched=diff.matched, mode=found.mode, since=found.since or "none"
        )

    @dg.asset_check(
        asset=extractor.asset_name, name="artifact_frame_valid", blocking=True, partitions_def=commits
    )
    def frame(context: dg.AssetCheckExecutionContext, kb: KnowbaseResource) -> dg.AssetCheckResult:
        """The staged artifacts conform to the declared artifact frame (64-hex ids, >= 1 grounding row)."""
        base = since(context, kb)
        rows = gates.artifact_frame(kb.engine(), context.partition_key, extractor.extractor_id, since=base)
        errors = validation_errors(ARTIFACT_FRAME, rows)
        return _result(not errors, errors, checked=rows.height, since=base or "none")

    return [grounded, reproducible, frame]


@dg.asset_check(asset="code_spans", name="span_frame_valid", blocking=True, partitions_def=commits)
def span_frame_valid(context: dg.AssetCheckExecutionContext, kb: KnowbaseResource) -> dg.AssetCheckResult:
    """The commit's span occurrences conform to the declared span frame (64-hex ids, ordered lines >= 1);
    those on files whose blob the published base it was indexed against already had are the base's."""
    base = gates.proven_base(kb.engine(), context.partition_key, indexed_base(context))
    rows = gates.span_frame(kb.engine(), context.partition_key, since=base)
    errors = validation_errors(SPAN_FRAME, rows)
    return _result(not errors, errors, checked=rows.height, since=base or "none")


ZERO_ORPHANS = dg.AssetCheckKey(dg.AssetKey("knowledge_snapshot"), "zero_orphans")


@dg.asset_check(asset="knowledge_snapshot", name="zero_orphans", partitions_def=commits)
def zero_orphans(context: dg.AssetCheckExecutionContext, kb: KnowbaseResource) -> dg.AssetCheckResult:
    """No snapshot entry without grounding, no grounding row without an occurrence, no occurrence
    without a span; against the indexed base when this check passed there on its newest snapshot
    (only what the base does not prove is read: ``kb_resources.store.snapshot_delta``)."""
    base = gates.proven_base(kb.engine(), context.partition_key, indexed_base(context))
    if base is not None and not passed_on_newest(context.instance, ZERO_ORPHANS, base):
        base = None
    found = gates.orphans(kb.engine(), context.partition_key, since=base)
    return _result(not found, [f"{k}: {v}" for k, v in sorted(found.items())], since=base or "none")


@dg.asset_check(asset="code_spans", name="blob_cache_reproduces", blocking=True, partitions_def=commits)
def blob_cache_reproduces(
    context: dg.AssetCheckExecutionContext, kb: KnowbaseResource
) -> dg.AssetCheckResult:
    """A sample of the commit's blobs, re-parsed from scratch, matches the cache (incremental == full)."""
    bad = history.cache_mismatches(
        kb.git(), kb.engine(), context.partition_key, sample=kb.verify_sample, limits=kb.limits()
    )
    return _result(not bad, bad, sample=kb.verify_sample)


@dg.asset_check(asset="knowledge_snapshot", name="invalidation_exact", partitions_def=commits)
def invalidation_exact(context: dg.AssetCheckExecutionContext, kb: KnowbaseResource) -> dg.AssetCheckResult:
    """Against the indexed base: a unit's id changed exactly when its grounding changed."""
    base, report = history.invalidation_against_base(kb.engine(), context.partition_key)
    evidence = [*report.over_invalidated, *report.stale_survivors]
    return _result(
        report.exact,
        evidence,
        base=base or "none",
        compared=report.compared,
        reidentified=report.reidentified,
        version_bumped=dict(report.version_bumped),
    )


def all_checks() -> list[dg.AssetChecksDefinition]:
    """Every asset check of the Definitions."""
    checks = [
        span_frame_valid,
        blob_cache_reproduces,
        zero_orphans,
        invalidation_exact,
    ]
    for ex in EXTRACTORS:
        checks.extend(extractor_checks(ex))
    return checks


@functools.cache
def blocking_check_keys() -> tuple[dg.AssetCheckKey, ...]:
    """The blocking checks of the Definitions: what ``knowledge_snapshot`` requires to have passed
    on the staged data it publishes (a run of the snapshot alone does not include them)."""
    keys = (spec.key for check in all_checks() for spec in check.check_specs if spec.blocking)
    return tuple(sorted(keys, key=lambda k: (k.asset_key.to_user_string(), k.name)))
