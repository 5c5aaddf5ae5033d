"""Extract: run one registered extractor over a commit and stage its artifacts.

Artifacts are content-addressed, so writing them is idempotent; what makes them part of the
commit's knowledge is the staged entry, published atomically later by the snapshot step.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine

from kb_assets.core.callgraph.graph import resolutions_in
from kb_assets.core.extractors.base import Draft, Extraction, Extractor, OnDemandDrafts
from kb_assets.core.extractors.call_carry import EdgeCarry
from kb_assets.core.extractors.registry import extractor as registered
from kb_assets.core.grounding import build_artifacts
from kb_assets.core.ids import sorted_distinct
from kb_assets.core.models import Artifact, Gap
from kb_assets.core.paths.entrypoints import resolve_shared
from kb_assets.core.program import Program
from kb_assets.core.spans import ParseLimits
from kb_assets.core.symbols.table import symbol_table
from kb_assets.indexing import artifact_memos, prefetch
from kb_assets.indexing.artifact_writes import Drafts, store_drafts
from kb_assets.indexing.carries import kept_carry, known_stored, open_carry, remembering
from kb_assets.indexing.load import load_program
from kb_assets.indexing.resolution_files import ResolutionFile, resolutions_file
from kb_resources.git.repo import GitRepo
from kb_resources.store import bulk, writes
from kb_resources.store.bulk import LoadLog, refresh_statistics


@dataclass(frozen=True, slots=True)
class ExtractResult:
    """What one extractor produced for one commit, in memory (``extract_commit`` stages it instead)."""

    artifacts: tuple[Artifact, ...]
    gaps: tuple[Gap, ...]


def ids_digest(ids: Iterable[str]) -> str:
    """Order-independent digest of a set of ids: sha256 over the sorted distinct ids, concatenated
    (Django's 75,908 call-edge ids hashed one by one took ~0.1 s of every commit). Ids already
    sorted and distinct (``StagedResult``'s) are taken as they are (``ids.sorted_distinct``) and
    hashed ``DIGEST_CHUNK`` at a time: 23 -> ~8 ms for the call edges, the same bytes hashed."""
    ordered = sorted_distinct(ids)
    digest = hashlib.sha256()
    for start in range(0, len(ordered), DIGEST_CHUNK):
        digest.update("".join(ordered[start : start + DIGEST_CHUNK]).encode("ascii"))
    return digest.hexdigest()


DIGEST_CHUNK = 4096
"""Ids joined and hashed at a time by ``ids_digest``: one 4.9 MB string for Django's call edges
cost more than the hashing itself."""


def run_extractor(extractor: Extractor, program: Program) -> ExtractResult:
    """Resolve and identify, without touching the store (also used by the reproducibility gate)."""
    extraction = extractor.resolve(program)
    artifacts = build_artifacts(
        extraction.drafts,
        extractor_id=extractor.extractor_id,
        extractor_version=extractor.version,
        program=program,
        kind=extractor.kind,
    )
    return ExtractResult(artifacts=tuple(artifacts), gaps=extraction.gaps)


@dataclass(frozen=True, slots=True)
class StagedResult:
    """What ``extract_commit`` staged for one commit: the artifacts' ids, not the artifacts."""

    artifact_ids: tuple[str, ...]
    gaps: tuple[Gap, ...]
    reused: int = 0
    """How many of the ids were carried from a previous commit (``carries``)."""
    resolved_again: int | None = None
    """Call edges built from an earlier commit's resolutions (kept by ``kb watch`` or read from
    the resolutions file): the files whose call sites were resolved again, the rest replayed;
    None when every file was resolved."""
    ahead: bool = False
    """Whether a forked copy did the work while an earlier step ran (``prefetch``)."""

    @property
    def data_version(self) -> str:
        """Digest of the artifact ids: Dagster's data version for this asset partition."""
        return ids_digest(self.artifact_ids)

    def metadata(self) -> dict[str, bool | int | dict[str, int]]:
        """What the asset's materialization shows: counts, gap reasons, how many files the call
        graph resolved again when it was built incrementally, and whether the work was done
        ahead, by a forked copy (``prefetch``)."""
        found: dict[str, bool | int | dict[str, int]] = {
            "artifacts": len(self.artifact_ids),
            "reused": self.reused,
            "gaps": len(self.gaps),
            "gap_reasons": dict(sorted(Counter(g.reason for g in self.gaps).items())),
        }
        if self.resolved_again is not None:
            found["files_resolved_again"] = self.resolved_again
        if self.ahead:
            found["done_ahead"] = True
        return found


def extract_commit(
    engine: Engine, program: Program, extractor: Extractor, *, carry_file: Path | None = None
) -> StagedResult:
    """Run the extractor, store its artifacts and stage them and its gaps for the commit.

    The artifacts are built and stored ``artifact_writes.WRITE_ARTIFACTS`` at a time, each batch
    in its own transaction and then dropped, as are the drafts already built: the whole set never
    exists at once (Django's 75,908 call edges: about 20 MiB less at the run's peak); many drafts
    are shared with a forked copy (``artifact_writes``). An artifact is content-addressed and goes
    in with its grounding, so a batch stored by a run that then fails is only unused content; no
    writer holds one batch's row locks while waiting for the next batch's, so writers of
    overlapping sets cannot deadlock. The commit's staged entries and gaps are replaced in one
    last transaction, as before. The call edges a carry (``carries``: the one a watch keeps, else
    ``carry_file``'s) knows unchanged come as ids, staged once they are found stored (known so
    when this store staged them at the carry's commit: ``carries.known_stored``; else looked up);
    if one is not (a carry made on another store), every edge is drafted again.
    """
    with _resolutions_file(carry_file) as resolutions:
        return _extract(engine, program, extractor, carry_file, resolutions)


def _extract(
    engine: Engine,
    program: Program,
    extractor: Extractor,
    carry_file: Path | None,
    resolutions: ResolutionFile | None,
) -> StagedResult:
    carry = open_carry(extractor, carry_file)
    if carry is None:
        ahead = prefetch.take(engine.url, program, extractor)
        done = ahead or _stored(engine, program, extractor)
        artifact_memos.apply(engine.url, extractor, done.lesson)
        ordered = sorted_distinct(sorted(done.ids))
        _stage(engine, program.sha, extractor, ordered, gaps=done.gaps, loaded=done.loaded)
        return StagedResult(artifact_ids=ordered, gaps=done.gaps, ahead=ahead is not None)
    ahead_of = extractor is registered(prefetch.AHEAD_OF)
    early = ahead_of and carry.remembers  # copies start with the step (``prefetch.AHEAD_OF``)
    if early:
        _start_ahead(engine, program)
    with resolutions_in(resolutions) if resolutions is not None else nullcontext():
        extraction, reused, resolved = _extraction(engine, program, extractor, carry)
    if early and resolved is not None:
        prefetch.start(engine.url, program, prefetch.AFTER_GRAPH, _stored)
    drafts, gaps = _drafts(extraction)
    del extraction  # the drafts are now only in ``drafts``, which hands each over once
    ids, log = store_drafts(engine, program, extractor, drafts)
    if ahead_of and not early:
        prefetch.start(engine.url, program, prefetch.AFTER_WRITES, _stored)
    drafted = len(ids)  # the drafts' ids, in draft order (one artifact per call-edge draft)
    ids += reused
    # Sorted once: staging cuts them into sets and the data version digests them, each sorting
    # them again (Django's 75,908 call-edge ids: 35 ms a sort, 2 ms when sorted already), and
    # found distinct once (``SortedIds``). A delta's reused ids come sorted (``Carried.reused``):
    # the sort merges the few drafted in.
    ordered = sorted_distinct(sorted(ids))
    with remembering(carry, program, ids[:drafted], carry_file, str(engine.url)):
        _stage(engine, program.sha, extractor, ordered, gaps=gaps, loaded=log.rows)
    return StagedResult(artifact_ids=ordered, gaps=gaps, reused=len(reused), resolved_again=resolved)


def start_ahead(repo: GitRepo, engine: Engine, sha: str, *, limits: ParseLimits, workers: int) -> bool:
    """Start the work done ahead of the call-edge step (``prefetch.AHEAD``) as soon as the commit
    is parsed, in a watch whose kept carry remembers a commit (else the call-edge step starts it):
    the copy then works while the parse's checks run (the watch waits for them), and has ended
    before the watch builds most of its call graph, which pays a copy-on-write fault for each page
    it touches while a copy lives (stop 46: a warm Django graph 135-157 ms alone, 242-245 ms beside
    a live copy). The program loaded here is the one the extractor steps take (``load``). Whether
    a copy was started."""
    carry = kept_carry()
    if not prefetch.active() or carry is None or not carry.remembers:
        return False
    return _start_ahead(engine, load_program(repo, engine, sha, limits=limits, workers=workers))


def _start_ahead(engine: Engine, program: Program) -> bool:
    """``prefetch.AHEAD``'s copy on ``program``, unless one was started (``prefetch.start``)."""
    symbol_table(program)  # made before the copy, which then shares it: the graph needs it too
    return prefetch.start(engine.url, program, prefetch.AHEAD, _stored)


def _stored(engine: Engine, program: Program, extractor: Extractor) -> prefetch.Done:
    """Resolve the extractor (``resolve_shared``) and store its artifacts (drafts held in a list
    with the extractor's artifact memo, if one is kept: ``artifact_memos``); what to stage."""
    drafts, gaps = _drafts(resolve_shared(program, extractor))
    memo = artifact_memos.memo_for(engine.url, extractor) if isinstance(drafts, list) else None
    ids, log = store_drafts(engine, program, extractor, drafts, memo)
    lesson = memo.lesson() if memo is not None else None
    return prefetch.Done(ids=tuple(ids), gaps=gaps, loaded=log.rows, lesson=lesson)


def _drafts(extraction: Extraction) -> tuple[Drafts, tuple[Gap, ...]]:
    """The extraction's drafts as ``store_drafts`` takes them (a list it clears as it goes, or
    drafts made on demand), and its gaps."""
    made = extraction.drafts
    return (made if isinstance(made, OnDemandDrafts) else list[Draft | None](made)), extraction.gaps


def _stage(
    engine: Engine,
    sha: str,
    extractor: Extractor,
    ordered: tuple[str, ...],
    *,
    gaps: tuple[Gap, ...],
    loaded: Counter[str],
) -> None:
    """Make ``ordered`` (ids, sorted) and ``gaps`` the extractor's staged set at ``sha``, in one
    transaction, and refresh the statistics of what was ``loaded``."""
    with engine.begin() as conn:
        writes.replace_staged(conn, sha, extractor.extractor_id, ordered)
        writes.replace_gaps(conn, sha, extractor.extractor_id, gaps)
        refresh_statistics(conn, LoadLog(loaded))


def _extraction(
    engine: Engine, program: Program, extractor: Extractor, carry: EdgeCarry
) -> tuple[Extraction, tuple[str, ...], int | None]:
    """The extraction to store, the ids it reuses (only from a carry whose ids are stored) and
    the files its call graph resolved again (``Carried.resolved``)."""
    carried = carry.resolve(program)
    if not carried.reused or known_stored(carry, engine, extractor.extractor_id):
        return carried.extraction, carried.reused, carried.resolved
    with engine.begin() as conn:
        stored = bulk.stored_keys(conn, "artifact", "artifact_id", carried.reused)
    if len(stored) == len(set(carried.reused)):
        return carried.extraction, carried.reused, carried.resolved
    carry.forget()
    return carry.resolve(program).extraction, (), carried.resolved


def _resolutions_file(carry_file: Path | None) -> ResolutionFile | nullcontext[None]:
    """The call graph's resolutions file beside the carry file (none without one), open for
    the whole extraction: a build saves its resolutions in a forked copy that is waited for
    when the extraction is stored and staged."""
    return ResolutionFile(resolutions_file(carry_file)) if carry_file is not None else nullcontext()
