"""Read queries over the knowledge store, shared by the CLI and the read-only MCP server.

Plain functions over a SQLAlchemy ``Connection`` that return frozen records or tuples. Bulk reads
take a fixed number of queries whatever their size (no query per blob or per artifact). Text sorts
use ``COLLATE "C"`` (code point order, like Python's ``sorted``) so output does not depend on the
server's locale. This module never imports the write path.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterator
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY

from kb_assets.core.models import Gap, Span, SpanKind
from kb_resources.store.commit_reads import (
    commit_stats,
    delta_base,
    grounded_base,
    occurrence_count,
    occurrence_digest,
    snapshot_artifact_ids,
    snapshot_digest,
    snapshot_parser_version,
    staged_artifact_ids,
    staged_exactly,
    staged_grounding_batches,
    staged_payloads,
    staged_sample,
    staged_total,
    ungrounded_staged,
)
from kb_resources.store.entry_sets import entry_counts
from kb_resources.store.location_reads import (
    CoveringSpan,
    FileAt,
    file_at,
    spans_covering,
)
from kb_resources.store.model_reads import gap_details, prior_payloads, staged_keys
from kb_resources.store.schema import (
    artifact,
    blob_span,
    branch_ref,
    code_span,
    commit_file,
    commit_ref,
    gap,
    occurrences,
    parsed_blob,
    snapshot_entry,
    snapshot_part,
)
from kb_resources.store.serving_reads import (
    embedding_coverage,
    embedding_model,
    nearest_artifacts,
    present_in,
    records_by_id,
    snapshots_holding,
)
from kb_resources.store.snapshot_delta import orphans_since
from kb_resources.store.snapshot_load import LoadedSnapshot, SpanName, load_snapshot
from kb_resources.store.snapshot_reads import (
    ArtifactRecord,
    GroundingLine,
    SnapshotMoves,
    orphans,
    snapshot_difference,
    snapshot_moves,
    snapshot_records,
    whole_snapshot_plan,
)
from kb_resources.store.staged_delta import changed_paths, proven_base

__all__ = [
    "ArtifactRecord",
    "CachedBlob",
    "CommitFile",
    "CoveringSpan",
    "FileAt",
    "GroundingLine",
    "LoadedSnapshot",
    "SnapshotMoves",
    "SpanName",
    "SpanOccurrence",
    "artifact_counts",
    "blob_summaries",
    "branches",
    "commit_files",
    "commit_stats",
    "delta_base",
    "embedding_coverage",
    "embedding_model",
    "file_at",
    "gap_details",
    "gaps",
    "grounded_base",
    "is_published",
    "load_parsed_blobs",
    "load_snapshot",
    "nearest_artifacts",
    "occurrence_count",
    "occurrence_digest",
    "orphans",
    "orphans_since",
    "parsed_blob_ids",
    "present_in",
    "prior_payloads",
    "proven_base",
    "published_commits",
    "records_by_id",
    "snapshot_artifact_ids",
    "snapshot_difference",
    "snapshot_digest",
    "snapshot_moves",
    "snapshot_parser_version",
    "snapshot_records",
    "snapshots_holding",
    "span_frame_batches",
    "span_occurrences",
    "spans_covering",
    "staged_artifact_ids",
    "staged_exactly",
    "staged_grounding_batches",
    "staged_keys",
    "staged_payloads",
    "staged_sample",
    "staged_total",
    "ungrounded_staged",
]

_BLOB_IDS = ARRAY(sa.CHAR(40))


class CachedBlob(NamedTuple):
    """What the parse cache holds for one blob: spans in blob order, encoded facts, gaps, length."""

    spans: tuple[Span, ...]
    facts: bytes
    gaps: tuple[Gap, ...]
    line_count: int


class CommitFile(NamedTuple):
    """One file of a commit as recorded by ``commit_tree``."""

    path: str
    blob_id: str
    mode: str
    size: int
    module: str | None
    is_package: bool


class SpanOccurrence(NamedTuple):
    """A span at a path of a commit, with what it is."""

    span_id: str
    kind: str
    fq_symbol_path: str
    path: str
    start_line: int
    end_line: int


def _blob_ids(blob_ids: Collection[str]) -> sa.Cast[Any]:
    """Bind a list of blob ids as ``char(40)[]`` so the primary-key index is used."""
    return sa.cast(sa.bindparam("blob_ids", sorted(set(blob_ids)), type_=_BLOB_IDS), _BLOB_IDS)


def parsed_blob_ids(conn: sa.Connection, parser_version: str, blob_ids: Collection[str]) -> set[str]:
    """Which of ``blob_ids`` are already parsed under ``parser_version`` (the parse cache's hits)."""
    query = sa.select(parsed_blob.c.blob_id).where(
        parsed_blob.c.parser_version == parser_version, parsed_blob.c.blob_id == sa.any_(_blob_ids(blob_ids))
    )
    return set(conn.scalars(query))


_SPAN_KINDS: dict[str, SpanKind] = {kind.value: kind for kind in SpanKind}
"""Each kind by its stored name: a dictionary lookup instead of an enum call per span (Django's
58k spans: 2 instead of 24 ms of every program a process loads)."""


def load_parsed_blobs(
    conn: sa.Connection, parser_version: str, blob_ids: Collection[str]
) -> dict[str, CachedBlob]:
    """The cached parse of each of ``blob_ids`` that has one, in two queries."""
    ids = _blob_ids(blob_ids)
    spans: dict[str, list[Span]] = defaultdict(list)
    span_query = (
        sa.select(
            blob_span.c.blob_id,
            blob_span.c.span_id,
            code_span.c.kind,
            code_span.c.fq_symbol_path,
            blob_span.c.start_line,
            blob_span.c.end_line,
        )
        .join(code_span, code_span.c.span_id == blob_span.c.span_id)
        .where(blob_span.c.parser_version == parser_version, blob_span.c.blob_id == sa.any_(ids))
        .order_by(blob_span.c.blob_id, blob_span.c.ordinal)
    )
    kinds = _SPAN_KINDS
    for blob_id, span_id, kind, fq, start, end in conn.execute(span_query).all():
        spans[blob_id].append(Span(span_id, kinds[kind], fq, start, end))
    blob_query = sa.select(
        parsed_blob.c.blob_id, parsed_blob.c.facts, parsed_blob.c.gaps, parsed_blob.c.line_count
    ).where(parsed_blob.c.parser_version == parser_version, parsed_blob.c.blob_id == sa.any_(ids))
    return {
        blob_id: CachedBlob(
            tuple(spans.get(blob_id, ())),
            bytes(facts),
            tuple(Gap(path="", reason=g["reason"], detail=g["detail"], line=g.get("line")) for g in gaps),
            line_count,
        )
        for blob_id, facts, gaps, line_count in conn.execute(blob_query).all()
    }


class BlobSummary(NamedTuple):
    """How many spans a cached blob has and what was not understood in it."""

    span_count: int
    gaps: tuple[Gap, ...]


def blob_summaries(
    conn: sa.Connection, parser_version: str, blob_ids: Collection[str]
) -> dict[str, BlobSummary]:
    """Span counts and gaps of cached blobs, without loading spans or facts (one query)."""
    counts = (
        sa.select(sa.func.count())
        .where(blob_span.c.blob_id == parsed_blob.c.blob_id, blob_span.c.parser_version == parser_version)
        .scalar_subquery()
    )
    query = sa.select(parsed_blob.c.blob_id, counts, parsed_blob.c.gaps).where(
        parsed_blob.c.parser_version == parser_version, parsed_blob.c.blob_id == sa.any_(_blob_ids(blob_ids))
    )
    return {
        blob_id: BlobSummary(
            int(count),
            tuple(Gap(path="", reason=g["reason"], detail=g["detail"], line=g.get("line")) for g in gaps),
        )
        for blob_id, count, gaps in conn.execute(query).all()
    }


def commit_files(conn: sa.Connection, sha: str) -> list[CommitFile]:
    """The recorded files of commit ``sha``, sorted by path."""
    query = (
        sa.select(
            commit_file.c.path,
            commit_file.c.blob_id,
            commit_file.c.mode,
            commit_file.c.size,
            commit_file.c.module,
            commit_file.c.is_package,
        )
        .where(commit_file.c.sha == sha)
        .order_by(commit_file.c.path.collate("C"))
    )
    return [CommitFile(*row) for row in conn.execute(query).all()]


def is_published(conn: sa.Connection, sha: str) -> bool:
    """Whether commit ``sha`` has a published snapshot."""
    query = sa.select(commit_ref.c.published_at).where(commit_ref.c.sha == sha)
    return conn.scalar(query) is not None


def published_commits(conn: sa.Connection) -> dict[str, datetime]:
    """Every commit with a published snapshot, with when it was published."""
    query = sa.select(commit_ref.c.sha, commit_ref.c.published_at).where(
        commit_ref.c.published_at.is_not(None)
    )
    return {sha: at for sha, at in conn.execute(query).all()}


def span_occurrences(
    conn: sa.Connection, sha: str, parser_version: str | None = None, *, since: str | None = None
) -> list[SpanOccurrence]:
    """The span occurrences of commit ``sha``, sorted by path, start line and ordinal (published
    commits by default; the pipeline passes its ``parser_version`` before publishing). With
    ``since`` (a proven base, see ``staged_delta``), only those on paths whose blob differs there:
    a blob's spans never change, so the others are the base's own occurrences."""
    o = occurrences(parser_version).c
    c = code_span.c
    query = _at_commit(
        sa.select(o.span_id, c.kind, c.fq_symbol_path, o.path, o.start_line, o.end_line).join(
            code_span, c.span_id == o.span_id
        ),
        o,
        sha,
        since,
    )
    with _planned(conn, since):
        return [SpanOccurrence(*row) for row in conn.execute(query).all()]


def _at_commit(query: sa.Select[Any], o: Any, sha: str, since: str | None) -> sa.Select[Any]:
    """``query`` over occurrences ``o`` narrowed to commit ``sha`` (and to the paths whose blob
    differs at ``since``), in path, start line and ordinal order."""
    query = query.where(o.sha == sha).order_by(o.path.collate("C"), o.start_line, o.ordinal)
    return query if since is None else query.where(o.path.in_(changed_paths(sha, since)))


def _planned(conn: sa.Connection, since: str | None) -> AbstractContextManager[None]:
    """The plan of an ``_at_commit`` read: hash joins for a whole commit (``whole_snapshot_plan``),
    the planner's own choice for the paths changed since a base, which it probes by index."""
    return whole_snapshot_plan(conn) if since is None else nullcontext()


SPAN_FRAME_BATCH = 10_000
"""Rows per batch of ``span_frame_batches``."""


def span_frame_batches(
    conn: sa.Connection, sha: str, parser_version: str, *, since: str | None = None
) -> Iterator[list[tuple[str, str, int, int]]]:
    """(span_id, path, start_line, end_line) of the commit's span occurrences, for the span frame
    check, in ``span_occurrences``' order and batches of ``SPAN_FRAME_BATCH`` rows streamed from
    the server (``since`` as there). The check turns each batch into columns and drops it: all of
    Django's 58k occurrences at once, as rows and then a frame, left ~30 MiB in the run."""
    o = occurrences(parser_version).c
    query = _at_commit(sa.select(o.span_id, o.path, o.start_line, o.end_line), o, sha, since)
    with _planned(conn, since):
        result = conn.execute(query.execution_options(yield_per=SPAN_FRAME_BATCH))
        for batch in result.partitions():
            yield [tuple(row) for row in batch]


def gaps(conn: sa.Connection, sha: str) -> list[Gap]:
    """What was not understood at commit ``sha``, by source and in recorded order."""
    query = sa.select(gap.c.path, gap.c.reason, gap.c.detail, gap.c.line, gap.c.source).where(
        gap.c.sha == sha
    )
    return [Gap(*row) for row in conn.execute(query.order_by(gap.c.source, gap.c.ordinal)).all()]


def artifact_counts(
    conn: sa.Connection, sha: str, extractor_ids: Collection[str] | None = None
) -> dict[str, int]:
    """How many artifacts of each kind the snapshot of ``sha`` holds (of ``extractor_ids`` only
    when given).

    Planned as the whole-snapshot read it is: just published, the sha has no statistics and the
    planner probed ``artifact`` once per entry (88k probes, 0.3-0.6 s on Django).
    """
    query = (
        sa.select(artifact.c.kind, sa.func.count())
        .join(snapshot_entry, snapshot_entry.c.artifact_id == artifact.c.artifact_id)
        .where(snapshot_entry.c.sha == sha)
        .group_by(artifact.c.kind)
        .order_by(artifact.c.kind.collate("C"))
    )
    if extractor_ids is not None:
        query = query.where(snapshot_entry.c.extractor_id.in_(sorted(set(extractor_ids))))
    with whole_snapshot_plan(conn):
        return {kind: count for kind, count in conn.execute(query).all()}


def snapshot_sizes(conn: sa.Connection, sha: str) -> dict[str, int]:
    """How many entries each extractor has in the snapshot of ``sha``, from its sets' sizes (no
    member is read: ~1 ms, where counting Django's 88k artifacts by kind takes ~0.1 s)."""
    return entry_counts(conn, snapshot_part, sha)


def branches(conn: sa.Connection) -> dict[str, str]:
    """Each followed branch and the newest commit indexed on it."""
    query = sa.select(branch_ref.c.name, branch_ref.c.sha).order_by(branch_ref.c.name.collate("C"))
    return {name: sha for name, sha in conn.execute(query).all()}
