"""The gates as Dagster asset checks, generated per extractor asset plus the snapshot checks: one
step per asset (``_step``), each check's conclusion a ``verdicts`` function (no Dagster there).

Blocking checks sit on the extractor assets and ``code_spans``: when one fails, the snapshot of
that commit is not published. Oracle checks compare with independent tools (grimp) on every
commit of every repository.
"""

import functools
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial

import dagster as dg

from kb_assets.assets.evaluations import passed_on_newest
from kb_assets.assets.metadata import indexed_base
from kb_assets.core.extractors.base import Extractor
from kb_assets.core.extractors.registry import EXTRACTORS, levels
from kb_assets.partitions import commits
from kb_gates import gates, verdicts
from kb_resources.resources import KnowbaseResource


def _result(key: dg.AssetCheckKey, verdict: verdicts.Verdict) -> dg.AssetCheckResult:
    meta: dict[str, object] = {"evidence": "\n".join(verdict.evidence[:20]) or "none", **verdict.figures}
    return dg.AssetCheckResult(
        asset_key=key.asset_key,
        check_name=key.name,
        passed=verdict.passed,
        metadata=meta,  # type: ignore[arg-type]
    )


def oracle_unavailable(oracle: str, err: Exception) -> dg.AssetCheckResult:
    """A WARN result when the independent tool could not analyse the commit at all."""
    reason = f"{oracle} could not analyse this commit: {type(err).__name__}: {err}"[:500]
    return dg.AssetCheckResult(
        passed=False, severity=dg.AssetCheckSeverity.WARN, metadata={"evidence": reason, "oracle": oracle}
    )


CheckVerdict = Callable[[verdicts.Handles, str, str | None], verdicts.Verdict]
"""A check's verdict on (handles, commit, the base the step reads against)."""


@dataclass(frozen=True, slots=True)
class Check:
    """One check of an asset: its name, the description the UI shows, whether a failure stops the
    snapshot, its verdict given the step's handles, commit and base, and whether it may run beside
    the step's other such checks (``concurrent``)."""

    name: str
    description: str
    verdict: CheckVerdict
    blocking: bool = True
    concurrent: bool | Callable[[verdicts.Handles, str], bool] = False
    """True for a check that forks nothing and shares nothing with the others (it reads the store,
    or parses a sample of blobs); a function of (handles, commit) for one that is such a check only
    at some commits."""

    def runs_beside_others(self, h: verdicts.Handles, sha: str) -> bool:
        """Whether this check may run at ``sha`` beside the step's other such checks."""
        return self.concurrent(h, sha) if callable(self.concurrent) else self.concurrent


def concluded(
    checks: Sequence[Check], h: verdicts.Handles, sha: str, base: str | None
) -> Iterator[verdicts.Verdict]:
    """Each check's verdict, in ``checks`` order.

    The checks that run beside others at ``sha`` (``Check.concurrent``: store reads, a query and
    its validation, or a sample of blobs parsed again) run together first, at most
    ``CHECK_THREADS`` at a time, one thread and connection each, so that the server answers them
    on both cores. The others run afterwards in this thread, alone: a recomputation may fork a
    copy of the process, which ``forked.can_fork`` allows beside no thread of knowbase's own. A
    check that raises stops the iteration at its place in the order, as it would one after the
    other.
    """
    shared = [c for c in checks if c.runs_beside_others(h, sha)]
    found: dict[int, Future[verdicts.Verdict]] = {}
    if len(shared) > 1:
        h.engine(), h.git()  # made here: ``KnowbaseResource`` caches them per process, unlocked
        threads = min(len(shared), CHECK_THREADS)
        with ThreadPoolExecutor(threads, thread_name_prefix="kb-check") as pool:
            found = {id(c): pool.submit(c.verdict, h, sha, base) for c in shared}
    for check in checks:
        future = found.get(id(check))
        yield check.verdict(h, sha, base) if future is None else future.result()


CHECK_THREADS = 6
"""Checks of one step running at once: the extractors' step holds up to 18 that read the store,
and more threads than this only queue at the server's two cores and the engine's pool."""

Base = Callable[[dg.AssetCheckExecutionContext, KnowbaseResource], str | None]
"""Which published commit a step's checks read against (None: everything is checked)."""

Targets = Sequence[tuple[str, Sequence[Check]]]
"""The assets a step checks, each with its checks."""


def _step(name: str, targets: Targets, base: Base) -> dg.AssetChecksDefinition:
    """The checks of ``targets``' assets evaluated in one step (``multi_asset_check``): each step of
    a run costs Dagster ~10-25 ms of events and provenance reads on PostgreSQL storage, and the
    steps of a run execute one after the other, so the assets that can be checked together are
    (one step per asset instead of one per check took a cold one-file Django commit's Dagster
    run from 6.53/6.81 to 6.27/6.36 s; one step for the extractors that read no other asset,
    ``extractor_checks``, see the README). Each check is still its own key with its own result,
    severity and blocking rule, and a run that selects some of the assets evaluates their checks
    only."""
    specs = [
        (
            dg.AssetCheckSpec(
                c.name, asset=asset, description=c.description, blocking=c.blocking, partitions_def=commits
            ),
            c,
        )
        for asset, checks in targets
        for c in checks
    ]

    @dg.multi_asset_check(name=name, specs=[spec for spec, _ in specs], can_subset=len(targets) > 1)
    def invariants(
        context: dg.AssetCheckExecutionContext, kb: KnowbaseResource
    ) -> Iterator[dg.AssetCheckResult]:
        """The invariant checks of the assets at the partition's commit, one result each."""
        selected = context.selected_asset_check_keys
        chosen = [(spec, check) for spec, check in specs if spec.key in selected]
        against = base(context, kb)
        found = concluded([check for _, check in chosen], kb, context.partition_key, against)
        for (spec, _), verdict in zip(chosen, found, strict=True):
            yield _result(spec.key, verdict)

    return invariants


def _indexed(context: dg.AssetCheckExecutionContext, kb: KnowbaseResource) -> str | None:
    return indexed_base(context)


def _proven(context: dg.AssetCheckExecutionContext, kb: KnowbaseResource) -> str | None:
    return gates.proven_base(kb.engine(), context.partition_key, indexed_base(context))


ZERO_ORPHANS = dg.AssetCheckKey(dg.AssetKey("knowledge_snapshot"), "zero_orphans")


def _proven_orphan_free(context: dg.AssetCheckExecutionContext, kb: KnowbaseResource) -> str | None:
    """The proven base, if ``zero_orphans`` passed on its newest snapshot (else the whole snapshot
    is read)."""
    base = _proven(context, kb)
    return base if base is not None and passed_on_newest(context.instance, ZERO_ORPHANS, base) else None


def extractor_checks(extractors: tuple[Extractor, ...] = EXTRACTORS) -> list[dg.AssetChecksDefinition]:
    """Blocking invariant checks on the extractors' assets (``extractor_check_list``): one step
    (``extractors_invariants``) for every extractor that reads no other's asset, then one per
    level of those that do (``levels``; a step named after its asset when it checks one). One
    step cannot check an asset and another that reads it: the reader waits for the blocking
    checks of what it reads."""
    steps = []
    for n, level in enumerate(levels(extractors)):
        targets = [(ex.asset_name, extractor_check_list(ex)) for ex in level]
        several = EXTRACTORS_STEP + (f"_{n}" if n else "")
        name = f"{level[0].asset_name}_invariants" if len(level) == 1 else several
        steps.append(_step(name, targets, _indexed))
    return steps


EXTRACTORS_STEP = "extractors_invariants"
"""The step that checks the extractors that read no other's asset."""


def extractor_check_list(extractor: Extractor) -> list[Check]:
    """The checks of one extractor's asset. A large staged set indexed against a published base
    is read against it: only what the base's snapshot does not prove is checked (``since`` in the
    metadata; ``kb_resources.store.staged_delta``); the grounded check only while few files
    changed (``reads.grounded_base``)."""
    return [
        Check(
            "every_artifact_grounded",
            "Every staged artifact has at least one grounding row pointing at a span occurrence of "
            "the commit.",
            partial(verdicts.grounded, extractor=extractor),
            concurrent=True,
        ),
        Check(
            "ids_reproducible",
            "The staged ids are reproducible: recomputing the extractor from a fresh load yields the "
            "identical ids (commits of up to KB_VERIFY_MAX_FILES files); above that, the ids of a "
            "sample of the staged records recompute from what was stored, and the full recomputation "
            "runs in ``verify_commit`` (check ``extractions_reproducible``).",
            partial(verdicts.reproducible, extractor=extractor),
            concurrent=verdicts.reads_a_stored_sample,
        ),
        Check(
            "artifact_frame_valid",
            "The staged artifacts conform to the declared artifact frame (64-hex ids, >= 1 grounding row).",
            partial(verdicts.artifact_frame_valid, extractor=extractor),
            concurrent=True,
        ),
    ]


def _whole(verdict: Callable[[verdicts.Handles, str], verdicts.Verdict]) -> CheckVerdict:
    """A verdict that reads the commit whole, as a check of a step read against a base."""

    def whole(h: verdicts.Handles, sha: str, base: str | None) -> verdicts.Verdict:
        return verdict(h, sha)

    return whole


SPAN_CHECKS = [
    Check(
        "span_frame_valid",
        "The commit's span occurrences conform to the declared span frame (64-hex ids, ordered "
        "lines >= 1); those on files whose blob the published base it was indexed against "
        "already had are the base's.",
        verdicts.span_frame_valid,
        concurrent=True,
    ),
    Check(
        "blob_cache_reproduces",
        "A sample of the commit's blobs, re-parsed from scratch, matches the cache (incremental == full).",
        _whole(verdicts.blob_cache_reproduces),
        concurrent=True,
    ),
]
"""The checks of ``code_spans``."""

span_checks = _step("code_spans_invariants", [("code_spans", SPAN_CHECKS)], _proven)

SNAPSHOT_CHECKS = [
    Check(
        ZERO_ORPHANS.name,
        "No snapshot entry without grounding, no grounding row without an occurrence, no "
        "occurrence without a span; against the indexed base when this check passed there on its "
        "newest snapshot (only what the base does not prove is read: "
        "``kb_resources.store.snapshot_delta``).",
        verdicts.zero_orphans,
        blocking=False,
        concurrent=True,
    ),
    Check(
        "invalidation_exact",
        "Against the indexed base: a unit's id changed exactly when its grounding changed.",
        _whole(verdicts.invalidation_exact),
        blocking=False,
        concurrent=True,
    ),
]
"""The checks of ``knowledge_snapshot``."""

snapshot_checks = _step(
    "knowledge_snapshot_invariants", [("knowledge_snapshot", SNAPSHOT_CHECKS)], _proven_orphan_free
)


def all_checks() -> list[dg.AssetChecksDefinition]:
    """Every asset check of the Definitions."""
    return [span_checks, snapshot_checks, *extractor_checks()]


@functools.cache
def blocking_check_keys() -> tuple[dg.AssetCheckKey, ...]:
    """The blocking checks of the Definitions: what ``knowledge_snapshot`` requires to have passed
    on the staged data it publishes (a run of the snapshot alone does not include them)."""
    keys = (spec.key for check in all_checks() for spec in check.check_specs if spec.blocking)
    return tuple(sorted(keys, key=lambda k: (k.asset_key.to_user_string(), k.name)))
