"""Parse: the ``code_spans`` step. Only blobs never seen before are parsed; the rest is reused.

Spans and facts are cached per blob id (and parser version), so a file that did not change, on
any branch, is never parsed twice. A commit's span occurrences are not copied: they are its
``commit_file`` rows joined with the cached ``blob_span`` rows (the ``span_occurrence`` view).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import partial

from sqlalchemy import Engine

from kb_assets.core.errors import IdentityConflictError
from kb_assets.core.extractors.registry import parser_version
from kb_assets.core.models import READABLE_MODES, EncodedBlob, FileMode, Gap
from kb_assets.core.modules import map_modules
from kb_assets.core.spans import ParseLimits
from kb_assets.indexing import head_start, predecode
from kb_assets.indexing.last_blobs import LastBlobs
from kb_assets.indexing.parallel import analyze_blobs
from kb_assets.indexing.progress import report
from kb_resources.git.repo import GitRepo
from kb_resources.store import reads, writes
from kb_resources.store.bulk import LoadLog, refresh_statistics
from kb_resources.store.reads import CommitFile

_written: tuple[tuple[str, str], dict[str, EncodedBlob]] | None = None
"""The blobs this process's last parse wrote, by (store url, parser version), until
``load_program`` takes them (``take_parsed``): the program a run loads right after its parse
(Django: every blob of a full index, ~0.3 s to read back from the store) comes from memory."""


@dataclass(frozen=True, slots=True)
class ParseStats:
    """Counters of one parse step; ``parsed + reused == files``."""

    files: int
    parsed: int
    reused: int
    spans: int
    gaps: int
    digest: str
    """The commit's occurrences named by one digest (``reads.occurrence_digest``; that of no
    occurrence when it has none): the asset's data version."""


def ensure_parsed(
    repo: GitRepo,
    engine: Engine,
    blob_ids: list[str],
    *,
    limits: ParseLimits,
    workers: int,
    force: bool = False,
    keep: bool = True,
    read_ahead: bool = False,
) -> set[str]:
    """Parse and cache every blob not cached yet (all of them when ``force``); returns those parsed.
    With ``keep``, what was written stays in memory for the load that follows (``_written``); a
    process that loads no program after its parse (``preparse``) passes ``keep=False``. With
    ``read_ahead`` (the parse step's, not the load's own), the blobs cached already are read and
    decoded for that load meanwhile (``predecode.start_reading``)."""
    pv = parser_version()
    with engine.connect() as conn:
        cached = reads.parsed_blob_ids(conn, pv, blob_ids)
    todo = blob_ids if force else [b for b in blob_ids if b not in cached]
    if read_ahead and not force:  # a forced parse writes, and decodes ahead, every blob anew
        predecode.start_reading(engine, [b for b in blob_ids if b in cached], workers=workers)
    # Asked even with nothing to do: a head start of blobs another process cached meanwhile is
    # stopped here, not left parsing beside the whole run.
    started = head_start.take(engine, todo, limits)
    if not todo:
        return set()
    total = len(todo)
    report("parse", 0, total)
    batches = analyze_blobs(
        ((b, repo.read_blob(b)) for b in todo),  # each read when its batch is made
        limits,
        workers=workers,
        on_done=lambda done: report("parse", done, total),
        started=started,
    )
    global _written  # noqa: PLW0603 - see its docstring
    _written = None
    written: dict[str, EncodedBlob] = {}
    pending: list[EncodedBlob] = []
    log = LoadLog()
    for batch in batches:
        pending += batch
        if len(pending) >= WRITE_BLOBS:
            _write(engine, pv, pending, cached if force else set(), log)
            if keep:
                written.update((blob.blob_id, blob) for blob in pending)
            pending = []
    if keep:
        written.update((blob.blob_id, blob) for blob in pending)
        predecode.start(engine, list(written.values()), workers=workers)  # while the rest is written
    _write(engine, pv, pending, cached if force else set(), log)
    with engine.begin() as conn:
        refresh_statistics(conn, log)
    _written = ((str(engine.url), pv), written) if keep else None
    return set(todo)


def forget_parsed() -> None:
    """Drop what the last parse wrote (``_written``): the next load reads it from the store."""
    global _written  # noqa: PLW0603 - see its docstring
    _written = None


def take_parsed(engine: Engine, blob_ids: list[str]) -> dict[str, EncodedBlob]:
    """Those of ``blob_ids`` that this process's last parse wrote to ``engine``'s cache under the
    current parser version, as it wrote them; each handed over once (``_written``)."""
    if _written is None or _written[0] != (str(engine.url), parser_version()):
        return {}
    written = _written[1]
    return {b: written.pop(b) for b in blob_ids if b in written}


WRITE_BLOBS = 250
"""Parsed blobs written per transaction: the parse is written as it comes back from the workers
(Django: twelve writes). The blobs still pending when the workers finish are written after them,
with one core idle: 500 a write (until stop 49) left Django's last 323 blobs there; at 250, 73,
and `code_spans` ended 4.65 -> 4.05 s into the run (medians of nine alternating full indexes,
8 of 9 earlier). What stays in memory is the encoded blobs, for the load that follows
(``_written``: ~20 MiB on Django, well below a run's peak), never their decoded facts. Each write
is its own transaction, so no writer holds the row locks of one write while it waits for those of
the next; a blob's rows go in together."""


def _write(engine: Engine, pv: str, fresh: list[EncodedBlob], cached: set[str], log: LoadLog) -> None:
    """Cache ``fresh``; those in ``cached`` (a forced re-parse) must first reproduce the cache."""
    if not fresh:
        return
    _verify_against_cache(engine, pv, [p for p in fresh if p.blob_id in cached])
    with engine.begin() as conn:
        writes.insert_encoded_blobs(conn, pv, fresh, log=log)


def _verify_against_cache(engine: Engine, pv: str, fresh: list[EncodedBlob]) -> None:
    """A forced re-parse must reproduce the cached spans exactly (determinism gate)."""
    if not fresh:
        return
    with engine.connect() as conn:
        old = reads.load_parsed_blobs(conn, pv, [p.blob_id for p in fresh])
    for blob in fresh:
        if tuple(s.span_id for s in old[blob.blob_id].spans) != tuple(s.span_id for s in blob.spans):
            raise IdentityConflictError("parsed blob", blob.blob_id)


NO_OCCURRENCES = hashlib.sha256(b"").hexdigest()
"""The digest of a commit without span occurrences (nothing parsed, or no Python file)."""


def parse_commit(
    repo: GitRepo, engine: Engine, sha: str, *, limits: ParseLimits, workers: int, force: bool = False
) -> ParseStats:
    """Parse what is new in the commit and record its span occurrences and parse gaps."""
    with engine.connect() as conn:
        files = reads.commit_files(conn, sha)
    readable = [f for f in files if f.mode in READABLE_MODES]
    blob_ids = sorted({f.blob_id for f in readable})
    parsed_now = ensure_parsed(
        repo, engine, blob_ids, limits=limits, workers=workers, force=force, read_ahead=True
    )
    with engine.connect() as conn:
        blobs = _summaries.get(engine, blob_ids, partial(reads.blob_summaries, conn, parser_version()))
        digest = reads.occurrence_digest(conn, sha, parser_version()) or NO_OCCURRENCES
    gaps = _parse_gaps(files, readable, blobs) + list(repo.tree_gaps(sha))
    with engine.begin() as conn:
        writes.replace_gaps(conn, sha, "parse", gaps)
    parsed = sum(1 for f in readable if f.blob_id in parsed_now)
    return ParseStats(
        files=len(readable),
        parsed=parsed,
        reused=len(readable) - parsed,
        spans=sum(blobs[f.blob_id].span_count for f in readable),
        gaps=len(gaps),
        digest=digest,
    )


_summaries: LastBlobs[reads.BlobSummary] = LastBlobs()
"""Span counts and gaps of the last commit's blobs: counting every blob's spans again took 21-23
ms of each commit a watch indexes (Django: 2,810 blobs)."""


def _parse_gaps(
    files: list[CommitFile], readable: list[CommitFile], blobs: dict[str, reads.BlobSummary]
) -> list[Gap]:
    """Gaps of the commit's files: unreadable entries, blob-level parse gaps, module naming."""
    gaps: list[Gap] = []
    for f in files:
        if f.mode == FileMode.SYMLINK.value:
            gaps.append(Gap(f.path, "symlink", "symbolic link; never followed", None, "parse"))
        elif f.mode == FileMode.SUBMODULE.value:
            gaps.append(
                Gap(f.path, "submodule", f"git submodule at {f.blob_id[:12]}; not indexed", None, "parse")
            )
    for f in readable:
        for g in blobs[f.blob_id].gaps:
            gaps.append(Gap(f.path, g.reason, g.detail, g.line, "parse"))
    gaps.extend(map_modules(f.path for f in readable).gaps)
    return sorted(gaps, key=lambda g: (g.path, g.line or 0, g.reason, g.detail))
