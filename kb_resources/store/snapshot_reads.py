"""Reading a published snapshot: its artifacts with grounding resolved to lines, and its orphans.

Artifacts are location-free; the lines of each grounding edge come from the commit's span
occurrences at read time (joined on sha, path and span_id). Two queries whatever the snapshot's
size, grouped in Python. Exposed through ``kb_resources.store.reads``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY

from kb_resources.store.entry_sets import entry_count, member_of
from kb_resources.store.hex_ids import HexId
from kb_resources.store.schema import (
    ARTIFACT_RECORD_COLUMNS,
    artifact,
    artifact_derived_from,
    snapshot_entry,
    snapshot_part,
    span_occurrence,
)

_KINDS = ARRAY(sa.Text())

ORPHAN_QUERY = sa.text(
    """
    SELECT
      count(*) FILTER (WHERE d.artifact_id IS NULL) AS entries_without_grounding,
      count(*) FILTER (WHERE d.artifact_id IS NOT NULL AND o.span_id IS NULL)
        AS grounding_without_occurrence,
      (SELECT count(*) FROM span_occurrence o
        WHERE o.sha = :sha
          AND NOT EXISTS (SELECT 1 FROM code_span c WHERE c.span_id = o.span_id))
        AS occurrences_without_span
    FROM snapshot_entry s
    LEFT JOIN artifact_derived_from d ON d.artifact_id = s.artifact_id
    LEFT JOIN span_occurrence o ON o.sha = s.sha AND o.path = d.path AND o.span_id = d.span_id
    WHERE s.sha = :sha
    """
)
"""The first two counts come from one pass over the snapshot's entries and their grounding rows:
an entry without any row keeps one row with no grounding, a grounding row that occurs nowhere
keeps one with no occurrence. Only unmatched rows are counted, so a span occurring twice in one
file (matched twice) changes nothing. Two subqueries each joined the entries to the grounding
table; on Django's full index this read runs last, on the run's critical path, and one pass takes
174 ms instead of 221 (medians of seven alternating rounds under ``whole_snapshot_plan``)."""


@contextmanager
def whole_snapshot_plan(conn: sa.Connection, *, merge_joins: bool = True) -> Iterator[None]:
    """Plan the enclosed whole-snapshot reads with hash joins, never nested loops (nor merge
    joins, with ``merge_joins=False``).

    Right after a commit is published its sha is absent from the planner's statistics, which then
    estimates one row per sha and picks nested loops over the ``span_occurrence`` view: minutes
    instead of milliseconds on a Django-sized snapshot. A read of a whole snapshot always wants
    hash joins, so it says so instead of paying an ``ANALYZE`` of large tables on every publish;
    and 64 MB of ``work_mem`` keeps its hashes and sorts (tens of MB on Django) off disk. The same
    missing estimate makes a merge join look cheap, sorting hundreds of thousands of rows; a read
    measured faster without (``commit_reads.UNGROUNDED_MANY``) turns them off too.
    """
    conn.execute(_HASH_JOINS if merge_joins else _HASH_JOINS_ONLY)
    try:
        yield
    finally:
        conn.execute(_DEFAULT_JOINS)


_HASH_JOINS = sa.text("SET LOCAL enable_nestloop = off; SET LOCAL work_mem = '64MB'")
_HASH_JOINS_ONLY = sa.text(  # written out: SQL is never built from strings (test_faults_security)
    "SET LOCAL enable_nestloop = off; SET LOCAL enable_mergejoin = off; SET LOCAL work_mem = '64MB'"
)
_DEFAULT_JOINS = sa.text(
    "SET LOCAL enable_nestloop TO DEFAULT; SET LOCAL enable_mergejoin TO DEFAULT;"
    " SET LOCAL work_mem TO DEFAULT"
)


class GroundingLine(NamedTuple):
    """One grounding edge with its lines at the snapshot's commit (None if the occurrence is missing)."""

    span_id: str
    path: str
    role: str
    start_line: int | None
    end_line: int | None


@dataclass(frozen=True, slots=True)
class ArtifactRecord:
    """An artifact of a snapshot with its grounding resolved to lines at that commit."""

    artifact_id: str
    kind: str
    logical_key: str
    extractor_id: str
    extractor_version: str
    method: str
    confidence: float
    payload: dict[str, Any]
    grounding: tuple[GroundingLine, ...]
    prompt_version: str | None = None
    model_id: str | None = None


def record_columns() -> list[sa.Column[Any]]:
    """The ``artifact`` columns an ``ArtifactRecord`` is read from, in ``artifact_record`` order."""
    return [artifact.c[name] for name in ARTIFACT_RECORD_COLUMNS]


def artifact_record(row: Sequence[Any], grounding: tuple[GroundingLine, ...]) -> ArtifactRecord:
    """The record of a row selected by ``record_columns``, with its grounding lines."""
    aid, kind, key, ex_id, ex_version, method, confidence, payload, prompt_version, model_id = row
    return ArtifactRecord(
        aid, kind, key, ex_id, ex_version, method, confidence, payload, grounding, prompt_version, model_id
    )


def _in_snapshot(sha: str, kinds: Sequence[str] | None) -> list[sa.ColumnElement[bool]]:
    """WHERE clauses: artifacts of the snapshot of ``sha``, of ``kinds`` when given."""
    clauses = [snapshot_entry.c.sha == sha, snapshot_entry.c.artifact_id == artifact.c.artifact_id]
    if kinds is not None:
        bound = sa.cast(sa.bindparam("kinds", sorted(set(kinds)), type_=_KINDS), _KINDS)
        clauses.append(artifact.c.kind == sa.any_(bound))
    return clauses


def _edge_order(edge: GroundingLine) -> tuple[str, float, str, str]:
    """Grounding edges sort by path, start line (missing occurrences last), span id, role."""
    start = float("inf") if edge.start_line is None else edge.start_line
    return (edge.path, start, edge.span_id, edge.role)


GROUNDING_BATCH = 20_000
"""Grounding rows fetched per round trip when a whole snapshot's grounding is read (here and by
``snapshot_load``)."""

RECORD_BATCH = 5_000
"""Artifact rows (with their payloads) fetched per round trip when a whole snapshot is read."""


def _grounding(conn: sa.Connection, sha: str, kinds: Sequence[str] | None) -> dict[str, list[GroundingLine]]:
    """The grounding edges of the snapshot's artifacts, each with its occurrence lines at ``sha``."""
    d, o = artifact_derived_from, span_occurrence
    query = (
        sa.select(d.c.artifact_id, d.c.span_id, d.c.path, d.c.role, o.c.start_line, o.c.end_line)
        .select_from(snapshot_entry)
        .join(artifact, artifact.c.artifact_id == snapshot_entry.c.artifact_id)
        .join(d, d.c.artifact_id == snapshot_entry.c.artifact_id)
        .outerjoin(
            o, sa.and_(o.c.sha == snapshot_entry.c.sha, o.c.path == d.c.path, o.c.span_id == d.c.span_id)
        )
        .where(*_in_snapshot(sha, kinds))
    )
    grouped: dict[str, list[GroundingLine]] = defaultdict(list)
    # Rows are fetched a batch at a time (a server-side cursor) and each distinct span id, path and
    # role is kept as one str: a span is named by many edges (Django: 334k rows naming 37k spans in
    # 2.1k files), and the whole result with every row's own copies was ~300 MiB of ``kb export``'s
    # 503 MiB peak. A dict of this read's own names, not ``sys.intern``: the process-wide table
    # cost ~0.2 s of the export and kept ~13 MiB more per snapshot the MCP server loads.
    shared: dict[str, str] = {}
    one = shared.setdefault
    with whole_snapshot_plan(conn):
        for artifact_id, span_id, path, role, start, end in conn.execute(
            query.execution_options(yield_per=GROUNDING_BATCH)
        ):
            grouped[artifact_id].append(
                GroundingLine(one(span_id, span_id), one(path, path), one(role, role), start, end)
            )
    for edges in grouped.values():
        edges.sort(key=_edge_order)
    return grouped


def snapshot_records(
    conn: sa.Connection, sha: str, kinds: Sequence[str] | None = None
) -> list[ArtifactRecord]:
    """The artifacts of the snapshot of ``sha`` (of ``kinds`` when given), sorted by logical key, kind.

    Sorting happens here, by code point (Python's ``str`` order), not in the server: it is the
    same whatever the server's collation and spares PostgreSQL a disk sort of every payload.
    """
    a = artifact.c
    query = (
        sa.select(*record_columns())
        .select_from(snapshot_entry)
        .join(artifact, a.artifact_id == snapshot_entry.c.artifact_id)
        .where(*_in_snapshot(sha, kinds))
    )
    grounding = _grounding(conn, sha, kinds)
    rows = conn.execute(query.execution_options(yield_per=RECORD_BATCH))
    records = [artifact_record(row, tuple(grounding.get(row[0], ()))) for row in rows]
    records.sort(key=lambda r: (r.logical_key, r.kind, r.artifact_id))
    return records


ONE_SIDED_CTES = """
    after_parts AS (SELECT extractor_id, set_id FROM snapshot_part WHERE sha = :sha),
    before_parts AS (SELECT extractor_id, set_id FROM snapshot_part WHERE sha = :base),
    in_after_sets AS MATERIALIZED (
        SELECT d.extractor_id, m.artifact_id
          FROM (SELECT * FROM after_parts EXCEPT SELECT * FROM before_parts) d
          CROSS JOIN LATERAL (SELECT artifact_id FROM entry_set_member
                               WHERE set_id = d.set_id OFFSET 0) m
    ), in_before_sets AS MATERIALIZED (
        SELECT d.extractor_id, m.artifact_id
          FROM (SELECT * FROM before_parts EXCEPT SELECT * FROM after_parts) d
          CROSS JOIN LATERAL (SELECT artifact_id FROM entry_set_member
                               WHERE set_id = d.set_id OFFSET 0) m
    ), only_after AS MATERIALIZED (
        SELECT * FROM in_after_sets EXCEPT SELECT * FROM in_before_sets
    ), only_before AS MATERIALIZED (
        SELECT * FROM in_before_sets EXCEPT SELECT * FROM in_after_sets
    )"""
"""The ids (with their extractor) that only the snapshot of ``:sha`` or only that of ``:base``
holds, read set by set: a set both name holds the same ids, and an extractor's ids sit in one of
its sets only, so only the members of the sets one side names and the other does not can differ,
and one hash per side subtracts them (``staged_delta.NEW_STAGED_CTES`` reads a staged set the same
way). An id held under different extractors on the two sides counts on both. Each differing
set's members are read through the primary key's ``set_id`` prefix (a ``LATERAL`` per set,
fenced by ``OFFSET 0``): a plain join was planned as a scan of every member of every set (~300k
rows, ~50 ms a side on a store of a dozen Django commits) for the ~50 sets a one-file commit
changes. A fragment: it follows ``WITH`` or another fragment's comma."""

_MOVES = (
    "WITH"
    + ONE_SIDED_CTES
    + """, moved_keys AS MATERIALIZED (
        SELECT DISTINCT a.kind, a.logical_key
          FROM (SELECT * FROM only_after UNION ALL SELECT * FROM only_before) o
          CROSS JOIN LATERAL (SELECT kind, logical_key FROM artifact
                               WHERE artifact_id = o.artifact_id OFFSET 0) a
    ), keyed AS MATERIALIZED (
        SELECT a.kind, a.logical_key, a.artifact_id, a.extractor_version
          FROM moved_keys k
          CROSS JOIN LATERAL (SELECT * FROM artifact
                               WHERE kind = k.kind AND logical_key = k.logical_key OFFSET 0) a
    ), before AS (
        SELECT k.* FROM keyed k """
    + member_of("before_parts", "k")
    + """
    ), after AS MATERIALIZED (
        SELECT k.* FROM keyed k """
    + member_of("after_parts", "k")
    + """
    ), paired AS (
        SELECT after.kind,
               before.extractor_version = after.extractor_version AS same_version,
               before.artifact_id AS old_id,
               after.artifact_id AS new_id
        FROM after JOIN before ON before.kind = after.kind AND before.logical_key = after.logical_key
    )
    SELECT kind, same_version,
           CASE WHEN same_version AND old_id <> new_id THEN old_id END AS old_id,
           CASE WHEN same_version AND old_id <> new_id THEN new_id END AS new_id,
           count(*) AS units
    FROM paired
    GROUP BY 1, 2, 3, 4
    UNION ALL
    SELECT NULL, TRUE, NULL, NULL,
           (SELECT coalesce(sum(e.size), 0) FROM after_parts p JOIN entry_set e ON e.set_id = p.set_id)
           - (SELECT count(*) FROM after)
    """
)
MOVES_QUERY = sa.text(_MOVES).columns(old_id=HexId(), new_id=HexId())
"""Units of two snapshots paired by kind and logical key. Only keys with an id that one snapshot
holds and the other does not are paired in full (``ONE_SIDED_CTES``); every other unit of
``:sha`` is in both snapshots under the same id (a key names one unit of a snapshot), so the last
row counts them as compared, from the sets' sizes. The ``LATERAL`` lookups (fenced by ``LIMIT`` or
``OFFSET 0``, which keep PostgreSQL from flattening them into joins) make each step an index
probe per key or id: the sha of a new commit has no statistics yet, and plans that hashed a whole
snapshot or scanned every artifact took 0.13-0.55 s. On a
one-file Django commit: a few ms against ~0.3 s for pairing both whole snapshots."""


_ONE_SIDED = (
    "WITH"
    + ONE_SIDED_CTES
    + """
    SELECT TRUE AS added, artifact_id FROM only_after
    UNION ALL
    SELECT FALSE, artifact_id FROM only_before
    """
)
ONE_SIDED_QUERY = sa.text(_ONE_SIDED).columns(artifact_id=HexId())


class SnapshotDifference(NamedTuple):
    """The ids only one of two snapshots holds, and how many both hold."""

    removed: set[str]
    """Held by the base's snapshot only."""
    added: set[str]
    """Held by the head's snapshot only."""
    unchanged: int
    """Held by both."""


def snapshot_difference(conn: sa.Connection, base: str, head: str) -> SnapshotDifference:
    """Which ids the snapshots of ``base`` and ``head`` do not share, read set by set
    (``ONE_SIDED_CTES``): a few buckets after a small change instead of two times 88k ids."""
    removed: set[str] = set()
    added: set[str] = set()
    for is_added, artifact_id in conn.execute(ONE_SIDED_QUERY, {"base": base, "sha": head}):
        (added if is_added else removed).add(artifact_id)
    return SnapshotDifference(removed, added, entry_count(conn, snapshot_part, head) - len(added))


class SnapshotMoves(NamedTuple):
    """How the units present (by kind and logical key) in two snapshots relate."""

    compared: int
    """Units in both, by the same extractor version."""
    bumped: dict[str, int]
    """Units in both whose extractor version differs, by kind (wholly re-derived by design)."""
    moved: list[tuple[str, str]]
    """(old id, new id) of the compared units whose id changed, sorted."""


def snapshot_moves(conn: sa.Connection, base: str, sha: str) -> SnapshotMoves:
    """Pair the units of the snapshots of ``base`` and ``sha`` inside the server.

    Only the counts and the pairs whose id changed come back: on a one-file commit of Django that
    is a handful of rows instead of two times 88k, and only the units whose id is not in both
    snapshots are read (``MOVES_QUERY``).
    """
    compared = 0
    bumped: dict[str, int] = {}
    moved: list[tuple[str, str]] = []
    rows = conn.execute(MOVES_QUERY, {"base": base, "sha": sha}).all()
    for kind, same_version, old_id, new_id, units in rows:
        if not same_version:
            bumped[kind] = bumped.get(kind, 0) + int(units)
            continue
        compared += int(units)
        if old_id is not None:
            moved.append((old_id, new_id))
    return SnapshotMoves(compared, dict(sorted(bumped.items())), sorted(moved))


def orphans(conn: sa.Connection, sha: str) -> dict[str, int]:
    """Counts of broken links in the snapshot of ``sha``; all zero for a sound snapshot.

    ``entries_without_grounding``: snapshot entries whose artifact has no grounding row;
    ``grounding_without_occurrence``: grounding rows of snapshot artifacts whose (path, span_id)
    does not occur at ``sha``; ``occurrences_without_span``: occurrences at ``sha`` whose span is
    missing from ``code_span``. ``snapshot_delta.orphans_since`` counts against a proven base.
    """
    with whole_snapshot_plan(conn):
        row = conn.execute(ORPHAN_QUERY, {"sha": sha}).one()
    return {key: int(value) for key, value in row._mapping.items()}
