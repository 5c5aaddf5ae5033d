"""Reads the MCP server needs per request: units by id, snapshot membership, nearest embeddings.

Every query is bounded by the request (a handful of ids, one snapshot) and driven by an index:
artifacts by primary key, grounding by ``artifact_derived_from``'s ``artifact_id`` index, occurrences
through ``commit_file``'s (sha, path) key into ``blob_span``'s (blob_id, parser_version) prefix,
snapshot membership by ``snapshot_entry``'s (sha, artifact_id) key or its ``artifact_id`` index.
Values are always bound parameters. Exposed through ``kb_resources.store.reads``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY

from kb_resources.store.hex_ids import HexId
from kb_resources.store.schema import artifact, artifact_derived_from, snapshot_entry, span_occurrence
from kb_resources.store.snapshot_reads import (
    ArtifactRecord,
    GroundingLine,
    _edge_order,
    artifact_record,
    record_columns,
)

_IDS = ARRAY(HexId())
_SHAS = ARRAY(sa.CHAR(40))


def bound_ids(name: str, ids: Collection[str]) -> sa.Cast[Any]:
    """Bind artifact ids as an array of ids (``bytea[]``) so primary-key and index lookups are used."""
    return sa.cast(sa.bindparam(name, sorted(set(ids)), type_=_IDS), _IDS)


def bound_shas(name: str, shas: Collection[str]) -> sa.Cast[Any]:
    """Bind commit shas as ``char(40)[]``."""
    return sa.cast(sa.bindparam(name, sorted(set(shas)), type_=_SHAS), _SHAS)


FEW_PLACED = 2_000
"""Up to this many artifacts, each grounding edge is placed at the commit by its own index probes;
above it, by one hash join with the commit's whole occurrence set. On Django (58k occurrences):
30 artifacts 0.01 s by probes against 0.13-0.25 s by the join, 2,000 0.15 against 0.19 s, 30,000
1.0-1.5 s against 0.8 s."""


def _grounding_by_id(conn: sa.Connection, sha: str, ids: Collection[str]) -> dict[str, list[GroundingLine]]:
    """The grounding edges of ``ids`` with their occurrence lines at ``sha`` (None when missing)."""
    d, o = artifact_derived_from, span_occurrence
    at_commit = sa.and_(o.c.sha == sha, o.c.path == d.c.path, o.c.span_id == d.c.span_id)
    found: sa.FromClause
    if len(ids) <= FEW_PLACED:
        # LATERAL and fenced by OFFSET so the planner cannot flatten it into the plain join, which
        # builds the commit's whole occurrence set to hash it even for one artifact.
        found = sa.select(o.c.start_line, o.c.end_line).where(at_commit).offset(0).lateral("placed")
        joined = d.outerjoin(found, sa.true())
    else:
        found, joined = o, d.outerjoin(o, at_commit)
    query = (
        sa.select(d.c.artifact_id, d.c.span_id, d.c.path, d.c.role, found.c.start_line, found.c.end_line)
        .select_from(joined)
        .where(d.c.artifact_id == sa.any_(bound_ids("ids", ids)))
    )
    grouped: dict[str, list[GroundingLine]] = defaultdict(list)
    for artifact_id, *edge in conn.execute(query).all():
        grouped[artifact_id].append(GroundingLine(*edge))
    return grouped


def records_by_id(conn: sa.Connection, sha: str, ids: Collection[str]) -> dict[str, ArtifactRecord]:
    """The artifacts ``ids`` with their grounding placed at commit ``sha`` (two queries).

    The caller vouches that the ids belong to the snapshot of ``sha``; ids not stored are absent.
    """
    if not ids:
        return {}
    a = artifact.c
    query = sa.select(*record_columns()).where(a.artifact_id == sa.any_(bound_ids("ids", ids)))
    grounding = _grounding_by_id(conn, sha, ids)
    return {
        row[0]: artifact_record(row, tuple(sorted(grounding.get(row[0], ()), key=_edge_order)))
        for row in conn.execute(query)
    }


def present_in(conn: sa.Connection, sha: str, ids: Collection[str]) -> set[str]:
    """Which of ``ids`` are in the snapshot of ``sha`` (primary-key probes)."""
    if not ids:
        return set()
    query = sa.select(snapshot_entry.c.artifact_id).where(
        snapshot_entry.c.sha == sha, snapshot_entry.c.artifact_id == sa.any_(bound_ids("ids", ids))
    )
    return set(conn.scalars(query))


def snapshots_holding(
    conn: sa.Connection, ids: Collection[str], shas: Collection[str]
) -> Mapping[str, set[str]]:
    """For each of ``ids``, which of the commits ``shas`` have it in their snapshot."""
    if not ids or not shas:
        return {}
    s = snapshot_entry.c
    query = sa.select(s.artifact_id, s.sha).where(
        s.artifact_id == sa.any_(bound_ids("ids", ids)), s.sha == sa.any_(bound_shas("shas", shas))
    )
    held: dict[str, set[str]] = defaultdict(set)
    for artifact_id, sha in conn.execute(query).all():
        held[artifact_id].add(sha)
    return held


def embedding_coverage(conn: sa.Connection, sha: str) -> dict[str | None, int]:
    """How many units of the snapshot of ``sha`` have a vector of each model (key None: no vector).

    A new commit shares most artifact ids with its parent, so its snapshot is usually embedded in
    part before ``kb embed`` runs on it; the caller says how much is missing."""
    a = artifact.c
    model = sa.case((a.embedding.is_(None), sa.null()), else_=a.embedding_model_id)
    query = (
        sa.select(model, sa.func.count())
        .select_from(snapshot_entry)
        .join(artifact, a.artifact_id == snapshot_entry.c.artifact_id)
        .where(snapshot_entry.c.sha == sha)
        .group_by(model)
    )
    return {m: int(n) for m, n in conn.execute(query).all()}


def embedding_model(conn: sa.Connection, sha: str) -> str | None:
    """The model most of the snapshot's embedded units have a vector of (None when none is
    embedded yet); ties go to the smaller model id."""
    counts = [(-n, m) for m, n in embedding_coverage(conn, sha).items() if m is not None]
    return min(counts)[1] if counts else None


HNSW_MIN_EF_SEARCH = 100
"""pgvector's default (40) returned a top 5 different from the exact one for 9 of 26 queries on
fief-server's 2178 units (an index whose rows were re-embedded three times); 100 agreed on all 26
for about 10 ms more per query (``bench/embed_search.py``)."""
HNSW_MAX_EF_SEARCH = 1000


def _tune_hnsw(conn: sa.Connection, k: int) -> None:
    """Make an HNSW scan of this transaction return ``k`` rows of the snapshot, best first.

    The index covers the artifacts of every commit; without iterative scans (pgvector >= 0.8) a
    scan stops after ``ef_search`` candidates and the snapshot filter can leave fewer than ``k``.
    On an older pgvector the settings are refused and the planner's plan is kept as it is."""
    ef_search = max(HNSW_MIN_EF_SEARCH, min(HNSW_MAX_EF_SEARCH, 2 * k))
    try:
        with conn.begin_nested():
            conn.execute(sa.text("SELECT set_config('hnsw.iterative_scan', 'strict_order', true)"))
            conn.execute(sa.text("SELECT set_config('hnsw.ef_search', :ef, true)"), {"ef": str(ef_search)})
    except sa.exc.DBAPIError:
        pass


def nearest_artifacts(
    conn: sa.Connection, sha: str, model_id: str, vector: Sequence[float], k: int
) -> list[tuple[str, float]]:
    """The ``k`` artifacts of the snapshot of ``sha`` nearest to ``vector`` by cosine distance
    (pgvector's ``<=>``, served by the HNSW index on ``artifact.embedding`` when the planner
    prefers it), with their distances; ties by artifact id."""
    a = artifact.c
    _tune_hnsw(conn, k)
    distance = a.embedding.cosine_distance(list(vector))
    query = (
        sa.select(a.artifact_id, distance)
        .join(snapshot_entry, snapshot_entry.c.artifact_id == a.artifact_id)
        .where(snapshot_entry.c.sha == sha, a.embedding_model_id == model_id, a.embedding.is_not(None))
        .order_by(distance, a.artifact_id)
        .limit(k)
    )
    return [(aid, float(d)) for aid, d in conn.execute(query).all()]
