"""What each invariant check of an index run concludes, without Dagster: plain verdicts.

``checks`` turns these into Dagster asset-check results, one step per asset; everything a check
decides (which base to read against, what counts as evidence, which figures it reports) is here,
over the store and git handles the pipeline's resource exposes (``Handles``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from sqlalchemy import Engine

from kb_assets.core.extractors.base import Extractor
from kb_assets.core.spans import ParseLimits
from kb_gates import gates, history
from kb_gates.check_process import CHECK_PROCESS
from kb_resources.git.repo import GitRepo

STORED_ID_SAMPLE = 2000
"""Staged records per extractor whose ids ``ids_reproducible`` recomputes on a large commit."""


class Handles(Protocol):
    """What a check reads through (``KnowbaseResource`` is one)."""

    workers: int
    verify_sample: int
    verify_max_files: int

    def engine(self) -> Engine: ...
    def git(self) -> GitRepo: ...
    def limits(self) -> ParseLimits: ...


@dataclass(frozen=True, slots=True)
class Verdict:
    """A check's conclusion: passed or not, the evidence (what failed), and its figures."""

    passed: bool
    evidence: list[str]
    figures: dict[str, object] = field(default_factory=dict)


def grounded(h: Handles, sha: str, base: str | None, *, extractor: Extractor) -> Verdict:
    """Every staged artifact has a grounding row on an occurrence of the commit (only the part the
    base does not prove, while few files changed: ``gates.grounded_since``)."""
    since = gates.grounded_since(h.engine(), sha, extractor.extractor_id, base)
    bad = gates.ungrounded(h.engine(), sha, extractor.extractor_id, since=since)
    return Verdict(not bad, bad, {"ungrounded": len(bad), "since": since or "none"})


def reproducible(h: Handles, sha: str, base: str | None, *, extractor: Extractor) -> Verdict:
    """The staged ids recompute: in full for a small commit, from a stored sample above that."""
    found = gates.ids_reproducibility(
        h.git(),
        h.engine(),
        sha,
        extractor,
        limits=h.limits(),
        workers=h.workers,
        max_files=h.verify_max_files,
        sample=STORED_ID_SAMPLE,
        base=base,
    )
    diff = found.diff
    figures = {"matched": diff.matched, "mode": found.mode, "since": found.since or "none"}
    return Verdict(diff.equal, diff.evidence(), figures)


def reads_a_stored_sample(h: Handles, sha: str) -> bool:
    """Whether ``reproducible`` only reads the store at ``sha`` (a stored sample: the commit has
    more than ``verify_max_files`` Python files) instead of resolving the program again."""
    return not gates.recomputes(h.git(), sha, h.verify_max_files)


def artifact_frame_valid(h: Handles, sha: str, base: str | None, *, extractor: Extractor) -> Verdict:
    """The staged artifacts (those new since a proven base) conform to ``ARTIFACT_FRAME``,
    validated batch by batch (in the frame checks' process: ``check_process``)."""
    since = gates.delta_since(h.engine(), sha, extractor.extractor_id, base)
    checked, errors = CHECK_PROCESS.frame_errors(
        "artifact",
        lambda: gates.artifact_rows(h.engine(), sha, extractor.extractor_id, since=since),
        ordered_unique="artifact_id",
    )
    return Verdict(not errors, errors, {"checked": checked, "since": since or "none"})


def span_frame_valid(h: Handles, sha: str, base: str | None) -> Verdict:
    """The commit's span occurrences (those on files the proven ``base`` did not have) conform to
    ``SPAN_FRAME``, validated batch by batch (in the frame checks' process)."""
    checked, errors = CHECK_PROCESS.frame_errors("span", lambda: gates.span_rows(h.engine(), sha, since=base))
    return Verdict(not errors, errors, {"checked": checked, "since": base or "none"})


def blob_cache_reproduces(h: Handles, sha: str) -> Verdict:
    """A sample of the commit's blobs, parsed again from scratch, matches the cache."""
    bad = history.cache_mismatches(h.git(), h.engine(), sha, sample=h.verify_sample, limits=h.limits())
    return Verdict(not bad, bad, {"sample": h.verify_sample})


def zero_orphans(h: Handles, sha: str, base: str | None) -> Verdict:
    """No orphan in the published snapshot (in what the proven ``base`` does not prove)."""
    found = gates.orphans(h.engine(), sha, since=base)
    return Verdict(not found, [f"{k}: {v}" for k, v in sorted(found.items())], {"since": base or "none"})


def invalidation_exact(h: Handles, sha: str) -> Verdict:
    """Against the indexed base, a unit's id changed exactly when its grounding changed."""
    against, report = history.invalidation_against_base(h.engine(), sha)
    figures = {
        "base": against or "none",
        "compared": report.compared,
        "reidentified": report.reidentified,
        "sites_moved": report.sites_moved,
        "version_bumped": dict(report.version_bumped),
    }
    return Verdict(report.exact, [*report.over_invalidated, *report.stale_survivors], figures)
