"""A whole published snapshot in memory: every artifact with its grounding placed at the commit.

The MCP server keeps one of these per commit it serves (a published snapshot never changes), so
requests are answered without a query per unit. Loading takes five simple queries, each a single
index or sequential scan (no multi-way join whose plan depends on fresh statistics, which a
just-published snapshot may not have yet), joined in Python by (path -> blob) and
(blob, span -> lines). The result says the same as ``snapshot_reads.snapshot_records``: an edge
whose span does not occur at its path has no lines. Exposed through ``kb_resources.store.reads``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection
from typing import NamedTuple

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY

from kb_resources.store import snapshot_reads
from kb_resources.store.hex_ids import HexId
from kb_resources.store.schema import (
    artifact,
    artifact_derived_from,
    blob_span,
    code_span,
    commit_file,
    commit_ref,
    snapshot_entry,
)
from kb_resources.store.snapshot_reads import (
    ArtifactRecord,
    GroundingLine,
    _edge_order,
    artifact_record,
    record_columns,
)

_IDS = ARRAY(HexId())
_BLOBS = ARRAY(sa.CHAR(40))


class SpanName(NamedTuple):
    """What a grounding span is: its kind and qualified name inside its file."""

    kind: str
    fq_symbol_path: str


class LoadedSnapshot(NamedTuple):
    """The records of a snapshot (sorted by logical key, kind, id) and the names of their spans."""

    records: list[ArtifactRecord]
    spans: dict[str, SpanName]


def _only(column: sa.ColumnElement[str], only: Collection[str] | None) -> list[sa.ColumnElement[bool]]:
    """The condition restricting ``column`` to the ids ``only`` (none when every id is wanted)."""
    if only is None:
        return []
    return [column == sa.any_(sa.cast(sa.bindparam("only", sorted(only), type_=_IDS), _IDS))]


def _edges(conn: sa.Connection, sha: str, only: Collection[str] | None) -> list[tuple[str, str, str, str]]:
    """(artifact_id, span_id, path, role) of every grounding edge of the snapshot (or of ``only``),
    fetched a batch at a time, with one str per distinct span id, path and role (as
    ``snapshot_reads._grounding`` reads them): the server keeps the snapshot, and every edge's own
    copies were ~60 MiB of each Django snapshot it holds."""
    d, s = artifact_derived_from.c, snapshot_entry.c
    query = (
        sa.select(d.artifact_id, d.span_id, d.path, d.role)
        .join(snapshot_entry, s.artifact_id == d.artifact_id)
        .where(s.sha == sha, *_only(s.artifact_id, only))
    )
    rows = conn.execute(query.execution_options(yield_per=snapshot_reads.GROUNDING_BATCH))
    shared: dict[str, str] = {}
    one = shared.setdefault
    return [
        (aid, one(span_id, span_id), one(path, path), one(role, role)) for aid, span_id, path, role in rows
    ]


def _lines(
    conn: sa.Connection, sha: str, paths: set[str], span_ids: set[str]
) -> dict[tuple[str, str], list[tuple[int, int]]]:
    """(path, span_id) -> the occurrences' (start, end) lines at ``sha``, for the given paths."""
    version = conn.scalar(sa.select(commit_ref.c.parser_version).where(commit_ref.c.sha == sha))
    files = sa.select(commit_file.c.path, commit_file.c.blob_id).where(commit_file.c.sha == sha)
    paths_of: dict[str, list[str]] = defaultdict(list)
    for path, blob in conn.execute(files).all():
        if path in paths:
            paths_of[blob].append(path)
    b = blob_span.c
    query = sa.select(b.blob_id, b.span_id, b.start_line, b.end_line).where(
        b.parser_version == version,
        b.blob_id == sa.any_(sa.cast(sa.bindparam("blobs", sorted(paths_of), type_=_BLOBS), _BLOBS)),
        b.span_id == sa.any_(sa.cast(sa.bindparam("spans", sorted(span_ids), type_=_IDS), _IDS)),
    )
    lines: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
    for blob, span_id, start, end in conn.execute(query.order_by(b.blob_id, b.ordinal)).all():
        for path in paths_of[blob]:
            lines[(path, span_id)].append((start, end))
    return lines


def _span_names(conn: sa.Connection, span_ids: set[str]) -> dict[str, SpanName]:
    """The kind and qualified name of each span."""
    ids = sa.cast(sa.bindparam("ids", sorted(span_ids), type_=_IDS), _IDS)
    query = sa.select(code_span.c.span_id, code_span.c.kind, code_span.c.fq_symbol_path).where(
        code_span.c.span_id == sa.any_(ids)
    )
    return {span_id: SpanName(kind, fq) for span_id, kind, fq in conn.execute(query).all()}


def load_snapshot(conn: sa.Connection, sha: str, only: Collection[str] | None = None) -> LoadedSnapshot:
    """Every artifact of the published snapshot of ``sha``, grounding placed at ``sha``; with
    ``only``, just those of its artifacts (ids not in the snapshot are left out)."""
    if only is not None and not only:
        return LoadedSnapshot([], {})
    edges = _edges(conn, sha, only)
    span_ids = {e[1] for e in edges}
    lines = _lines(conn, sha, {e[2] for e in edges}, span_ids)
    grounding: dict[str, list[GroundingLine]] = defaultdict(list)
    for artifact_id, span_id, path, role in edges:
        for start, end in lines.get((path, span_id)) or [(None, None)]:  # type: ignore[list-item]
            grounding[artifact_id].append(GroundingLine(span_id, path, role, start, end))
    a = artifact.c
    query = (
        sa.select(*record_columns())
        .join(snapshot_entry, snapshot_entry.c.artifact_id == a.artifact_id)
        .where(snapshot_entry.c.sha == sha, *_only(snapshot_entry.c.artifact_id, only))
    )
    records = [
        artifact_record(row, tuple(sorted(grounding.get(row[0], ()), key=_edge_order)))
        for row in conn.execute(query.execution_options(yield_per=snapshot_reads.RECORD_BATCH))
    ]
    records.sort(key=lambda r: (r.logical_key, r.kind, r.artifact_id))
    return LoadedSnapshot(records, _span_names(conn, span_ids))
