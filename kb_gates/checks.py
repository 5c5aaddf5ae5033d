"""The gates as Dagster asset checks, generated per extractor asset plus the snapshot checks.

Blocking checks sit on the extractor assets and ``code_spans``: when one fails, the snapshot of
that commit is not published. Oracle checks compare with independent tools (grimp) on every
commit of every repository.
"""

import functools
from collections.abc import Iterator

import dagster as dg

from kb_assets.assets.evaluations import passed_on_newest
from kb_assets.assets.metadata import indexed_base
from kb_assets.core.extractors.base import Extractor
from kb_assets.core.extractors.registry import EXTRACTORS
from kb_assets.partitions import commits
from kb_gates import gates, history
from kb_gates.frames import ARTIFACT_FRAME, SPAN_FRAME, batched_errors, validation_errors
from kb_resources.resources import KnowbaseResource

STORED_ID_SAMPLE = 2000
"""Staged records per extractor whose ids ``ids_reproducible`` recomputes on a large commit."""


def _result(
    key: dg.AssetCheckKey, passed: bool, evidence: list[str], **metadata: object
) -> dg.AssetCheckResult:
    meta: dict[str, object] = {"evidence": "\n".join(evidence[:20]) or "none", **metadata}
    return dg.AssetCheckResult(
        asset_key=key.asset_key,
        check_name=key.name,
        passed=passed,
        metadata=meta,  # type: ignore[arg-type]
    )


def oracle_unavailable(oracle: str, err: Exception) -> dg.AssetCheckResult:
    """A WARN result when the independent tool could not analyse the commit at all."""
    reason = f"{oracle} could not analyse this commit: {type(err).__name__}: {err}"[:500]
    return dg.AssetCheckResult(
        passed=False, severity=dg.AssetCheckSeverity.WARN, metadata={"evidence": reason, "oracle": oracle}
    )


def _spec(asset: str, name: str, description: str, *, blocking: bool = True) -> dg.AssetCheckSpec:
    """One check of a step that evaluates several (``multi_asset_check``): each step of a run costs
    Dagster ~10-25 ms of events and provenance reads on PostgreSQL storage, so an asset's checks
    run as one step (9 check steps instead of 27: a cold one-file Django commit's Dagster run
    6.53/6.81 -> 6.27/6.36 s). Each check is still its own key with its own result, severity and
    blocking rule."""
    return dg.AssetCheckSpec(
        name, asset=asset, description=description, blocking=blocking, partitions_def=commits
    )


GROUNDED = "Every staged artifact has at least one grounding row pointing at a span occurrence of the commit."
REPRODUCIBLE = (
    "The staged ids are reproducible: recomputing the extractor from a fresh load yields the identical "
    "ids (commits of up to KB_VERIFY_MAX_FILES files); above that, the ids of a sample of the staged "
    "records recompute from what was stored, and the full recomputation runs in ``verify_commit`` "
    "(check ``extractions_reproducible``)."
)
FRAME = "The staged artifacts conform to the declared artifact frame (64-hex ids, >= 1 grounding row)."


def extractor_checks(extractor: Extractor) -> list[dg.AssetChecksDefinition]:
    """Blocking invariant checks on one extractor's asset, evaluated in one step. A large staged
    set indexed against a published base is read against it: only what the base's snapshot does
    not prove is checked (``since`` in the metadata; ``kb_resources.store.staged_delta``); the
    grounded check only while few files changed (``reads.grounded_base``)."""
    asset = extractor.asset_name
    specs = [
        _spec(asset, "every_artifact_grounded", GROUNDED),
        _spec(asset, "ids_reproducible", REPRODUCIBLE),
        _spec(asset, "artifact_frame_valid", FRAME),
    ]
    keys = [spec.key for spec in specs]

    @dg.multi_asset_check(name=f"{asset}_invariants", specs=specs)
    def invariants(
        context: dg.AssetCheckExecutionContext, kb: KnowbaseResource
    ) -> Iterator[dg.AssetCheckResult]:
        """The artifacts the extractor staged are grounded, reproducible and well-formed."""
        base = indexed_base(context)
        yield _grounded(keys[0], kb, context.partition_key, extractor, base)
        yield _reproducible(keys[1], kb, context.partition_key, extractor, base)
        yield _frame(keys[2], kb, context.partition_key, extractor, base)

    return [invariants]


def _grounded(
    key: dg.AssetCheckKey, kb: KnowbaseResource, sha: str, extractor: Extractor, base: str | None
) -> dg.AssetCheckResult:
    since = gates.grounded_since(kb.engine(), sha, extractor.extractor_id, base)
    bad = gates.ungrounded(kb.engine(), sha, extractor.extractor_id, since=since)
    return _result(key, not bad, bad, ungrounded=len(bad), since=since or "none")


def _reproducible(
    key: dg.AssetCheckKey, kb: KnowbaseResource, sha: str, extractor: Extractor, base: str | None
) -> dg.AssetCheckResult:
    found = gates.ids_reproducibility(
        kb.git(),
        kb.engine(),
        sha,
        extractor,
        limits=kb.limits(),
        workers=kb.workers,
        max_files=kb.verify_max_files,
        sample=STORED_ID_SAMPLE,
        base=base,
    )
    diff = found.diff
    return _result(
        key, diff.equal, diff.evidence(), matched=diff.matched, mode=found.mode, since=found.since or "none"
    )


def _frame(
    key: dg.AssetCheckKey, kb: KnowbaseResource, sha: str, extractor: Extractor, base: str | None
) -> dg.AssetCheckResult:
    since = gates.delta_since(kb.engine(), sha, extractor.extractor_id, base)
    frames = gates.artifact_frames(kb.engine(), sha, extractor.extractor_id, since=since)
    checked, errors = batched_errors(ARTIFACT_FRAME, frames, ordered_unique="artifact_id")
    return _result(key, not errors, errors, checked=checked, since=since or "none")


SPAN_FRAME_VALID = dg.AssetCheckKey(dg.AssetKey("code_spans"), "span_frame_valid")
BLOB_CACHE_REPRODUCES = dg.AssetCheckKey(dg.AssetKey("code_spans"), "blob_cache_reproduces")


@dg.multi_asset_check(
    name="code_spans_invariants",
    specs=[
        _spec(
            "code_spans",
            SPAN_FRAME_VALID.name,
            "The commit's span occurrences conform to the declared span frame (64-hex ids, ordered "
            "lines >= 1); those on files whose blob the published base it was indexed against "
            "already had are the base's.",
        ),
        _spec(
            "code_spans",
            BLOB_CACHE_REPRODUCES.name,
            "A sample of the commit's blobs, re-parsed from scratch, matches the cache "
            "(incremental == full).",
        ),
    ],
)
def span_checks(
    context: dg.AssetCheckExecutionContext, kb: KnowbaseResource
) -> Iterator[dg.AssetCheckResult]:
    """The commit's span occurrences are well-formed and its blob cache reproduces."""
    sha = context.partition_key
    base = gates.proven_base(kb.engine(), sha, indexed_base(context))
    rows = gates.span_frame(kb.engine(), sha, since=base)
    errors = validation_errors(SPAN_FRAME, rows)
    yield _result(SPAN_FRAME_VALID, not errors, errors, checked=rows.height, since=base or "none")
    bad = history.cache_mismatches(kb.git(), kb.engine(), sha, sample=kb.verify_sample, limits=kb.limits())
    yield _result(BLOB_CACHE_REPRODUCES, not bad, bad, sample=kb.verify_sample)


ZERO_ORPHANS = dg.AssetCheckKey(dg.AssetKey("knowledge_snapshot"), "zero_orphans")
INVALIDATION_EXACT = dg.AssetCheckKey(dg.AssetKey("knowledge_snapshot"), "invalidation_exact")


@dg.multi_asset_check(
    name="knowledge_snapshot_invariants",
    specs=[
        _spec(
            "knowledge_snapshot",
            ZERO_ORPHANS.name,
            "No snapshot entry without grounding, no grounding row without an occurrence, no "
            "occurrence without a span; against the indexed base when this check passed there on its "
            "newest snapshot (only what the base does not prove is read: "
            "``kb_resources.store.snapshot_delta``).",
            blocking=False,
        ),
        _spec(
            "knowledge_snapshot",
            INVALIDATION_EXACT.name,
            "Against the indexed base: a unit's id changed exactly when its grounding changed.",
            blocking=False,
        ),
    ],
)
def snapshot_checks(
    context: dg.AssetCheckExecutionContext, kb: KnowbaseResource
) -> Iterator[dg.AssetCheckResult]:
    """The published snapshot has no orphans and was invalidated exactly against its base."""
    sha = context.partition_key
    base = gates.proven_base(kb.engine(), sha, indexed_base(context))
    if base is not None and not passed_on_newest(context.instance, ZERO_ORPHANS, base):
        base = None
    found = gates.orphans(kb.engine(), sha, since=base)
    yield _result(
        ZERO_ORPHANS, not found, [f"{k}: {v}" for k, v in sorted(found.items())], since=base or "none"
    )
    against, report = history.invalidation_against_base(kb.engine(), sha)
    evidence = [*report.over_invalidated, *report.stale_survivors]
    yield _result(
        INVALIDATION_EXACT,
        report.exact,
        evidence,
        base=against or "none",
        compared=report.compared,
        reidentified=report.reidentified,
        version_bumped=dict(report.version_bumped),
    )


def all_checks() -> list[dg.AssetChecksDefinition]:
    """Every asset check of the Definitions."""
    checks = [span_checks, snapshot_checks]
    for ex in EXTRACTORS:
        checks.extend(extractor_checks(ex))
    return checks


@functools.cache
def blocking_check_keys() -> tuple[dg.AssetCheckKey, ...]:
    """The blocking checks of the Definitions: what ``knowledge_snapshot`` requires to have passed
    on the staged data it publishes (a run of the snapshot alone does not include them)."""
    keys = (spec.key for check in all_checks() for spec in check.check_specs if spec.blocking)
    return tuple(sorted(keys, key=lambda k: (k.asset_key.to_user_string(), k.name)))
