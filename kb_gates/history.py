"""Gates across commits: the blob cache reproduces (incremental == full) and invalidation is exact.

* ``cache_mismatches``: re-parse a deterministic sample of the commit's blobs from git, from
  scratch, and compare spans and facts with what the cache holds. An incremental index differs
  from a full one only through the cache (resolution always runs over the whole commit), so a
  sample that reproduces is evidence that the incremental snapshot is the full one.
* ``invalidation_report``: between a commit and its base, for every unit present in both, its id
  changed exactly when its grounding (span ids, paths, roles) changed — no over-invalidation, no
  stale survivor. A kind whose extractor version changed is reported as wholly invalidated. One
  change of content is not one of grounding and still re-identifies: sites placed inside an
  unchanged span by line offsets (a call edge's call sites, a process path's sink sites) move
  when lines inside that span do — a comment or a docstring grows, which span ids ignore — so
  their ``lines`` change. A unit re-identified with unchanged grounding passes only when its
  payloads differ in those position keys (``Extractor.positions``) and in nothing else; it is
  counted as ``sites_moved``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import Engine

from kb_assets.core.extractors.registry import EXTRACTORS, parser_version
from kb_assets.core.models import READABLE_MODES
from kb_assets.core.spans import ParseLimits
from kb_gates.blob_sample import Sampled, blob_mismatches
from kb_resources.git.repo import GitRepo
from kb_resources.store import reads
from kb_resources.store.reads import ArtifactRecord


def stable_sample(sha: str, ids: Sequence[str], size: int) -> list[str]:
    """A deterministic sample of ``size`` ids (all when ``size`` < 0): stable per commit, different
    across commits, so a gate that samples sees other rows on the next commit."""
    unique = sorted(set(ids))
    if size < 0 or size >= len(unique):
        return unique
    return sorted(unique, key=lambda b: hashlib.sha256(f"{sha}:{b}".encode()).hexdigest())[:size]


def cache_mismatches(
    repo: GitRepo, engine: Engine, sha: str, *, sample: int, limits: ParseLimits
) -> list[str]:
    """Blobs whose cached spans or facts differ from a fresh parse (empty when the cache is sound;
    ``blob_sample``)."""
    with engine.connect() as conn:
        blob_ids = [f.blob_id for f in reads.commit_files(conn, sha) if f.mode in READABLE_MODES]
        chosen = stable_sample(sha, blob_ids, sample)
        cached = reads.load_parsed_blobs(conn, parser_version(), chosen)
    sampled: list[Sampled] = []
    for blob_id in chosen:
        old = cached.get(blob_id)
        if old is None:
            sampled.append((blob_id, b"", None))
        else:
            sampled.append((blob_id, repo.read_blob(blob_id), (old.spans, old.facts)))
    return blob_mismatches(sampled, limits)


@dataclass(frozen=True, slots=True)
class InvalidationReport:
    """How the units shared by two snapshots moved."""

    compared: int = 0
    reidentified: int = 0
    over_invalidated: tuple[str, ...] = ()
    stale_survivors: tuple[str, ...] = ()
    version_bumped: dict[str, int] = field(default_factory=dict)
    sites_moved: int = 0
    """Re-identified with unchanged grounding because only their sites' positions moved inside
    their spans (module docstring)."""

    @property
    def exact(self) -> bool:
        """True when ids changed exactly where grounding changed."""
        return not self.over_invalidated and not self.stale_survivors


def _grounding(record: ArtifactRecord) -> frozenset[tuple[str, str, str]]:
    return frozenset((g.span_id, g.path, g.role) for g in record.grounding)


POSITIONS: dict[str, tuple[str, ...]] = {ex.kind: tuple(getattr(ex, "positions", ())) for ex in EXTRACTORS}
"""Per kind, the payload keys that place its sites inside its grounding spans (module docstring)."""


def _sites_moved(prior: ArtifactRecord, record: ArtifactRecord) -> bool:
    """Whether two payloads differ in their position keys, and only there."""
    keys = POSITIONS.get(record.kind, ())
    if not keys or all(prior.payload.get(k) == record.payload.get(k) for k in keys):
        return False
    rest = [{k: v for k, v in r.payload.items() if k not in keys} for r in (prior, record)]
    return rest[0] == rest[1]


def invalidation_report(
    before: Sequence[ArtifactRecord], after: Sequence[ArtifactRecord]
) -> InvalidationReport:
    """Compare the units present (by kind and logical key) in both snapshots."""
    old = {(r.kind, r.logical_key): r for r in before}
    over: list[str] = []
    stale: list[str] = []
    bumped: dict[str, int] = {}
    compared = reidentified = moved = 0
    for record in after:
        prior = old.get((record.kind, record.logical_key))
        if prior is None:
            continue
        if prior.extractor_version != record.extractor_version:
            bumped[record.kind] = bumped.get(record.kind, 0) + 1
            continue
        compared += 1
        same_grounding = _grounding(prior) == _grounding(record)
        same_id = prior.artifact_id == record.artifact_id
        reidentified += not same_id
        if same_grounding and not same_id and _sites_moved(prior, record):
            moved += 1
        elif same_grounding and not same_id:
            over.append(f"{record.kind} {record.logical_key}: new id with unchanged grounding")
        elif same_id and (not same_grounding or prior.payload != record.payload):
            stale.append(f"{record.kind} {record.logical_key}: same id with different grounding or payload")
    return InvalidationReport(
        compared, reidentified, tuple(sorted(over)), tuple(sorted(stale)), bumped, moved
    )


def invalidation_against_base(engine: Engine, sha: str) -> tuple[str | None, InvalidationReport]:
    """The report between ``sha`` and the base it was indexed against (None: no base).

    Units whose id is the same in both snapshots are one stored row (same payload, same grounding
    rows), so only the units that were re-identified are loaded and compared in full: a one-file
    commit of a large repository reads a handful of records, not two whole snapshots.
    """
    with engine.connect() as conn:
        stats = reads.commit_stats(conn, sha) or {}
        base = stats.get("base_sha")
        if not base or base == sha:
            return None, InvalidationReport()
        compared, bumped, moved = reads.snapshot_moves(conn, base, sha)
        old = reads.records_by_id(conn, base, [m[0] for m in moved])
        new = reads.records_by_id(conn, sha, [m[1] for m in moved])
    detail = invalidation_report(list(old.values()), list(new.values()))
    return base, InvalidationReport(
        compared, len(moved), detail.over_invalidated, detail.stale_survivors, bumped, detail.sites_moved
    )
