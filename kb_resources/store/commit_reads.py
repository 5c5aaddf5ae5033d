"""Per-commit reads for the pipeline's bookkeeping and gates: staged sets, counts, digests.

Exposed through ``kb_resources.store.reads``. Sorting is by code point (``COLLATE "C"``), the
same on every server whatever its locale, so digests and listings are deterministic.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import sqlalchemy as sa

from kb_resources.store import staged_delta
from kb_resources.store.entry_sets import entry_count, entry_sets
from kb_resources.store.hex_ids import HexId
from kb_resources.store.schema import (
    artifact,
    artifact_derived_from,
    blob_span,
    commit_file,
    commit_ref,
    snapshot_entry,
    snapshot_part,
    staged_entry,
    staged_part,
)
from kb_resources.store.snapshot_reads import whole_snapshot_plan
from kb_resources.store.staged_delta import UNGROUNDED_SINCE, new_since, proven_base

FEW_STAGED = 10_000
"""Up to this many staged entries a whole-staged-set check is planned by PostgreSQL itself (index
probes per entry: 0.3 ms for 2 entries, 50 ms for 1,100, where forced hash joins scan every
grounding row of the store for 130-900 ms); above it, hash joins over the whole set."""

DELTA_MIN_STAGED = 100
"""Above this many staged entries, a set indexed against a proven base is checked against it
(``delta_base``): only the entries the base's snapshot lacks are read. A smaller set is read whole,
which costs about as much as finding the base (~20-30 ms) and checks everything. Until stop 38 the
line was drawn at ``FEW_STAGED``, the plan's own threshold: Django's 1,149 public symbols were then
checked whole at every one-file commit (grounded 0.14 s, reproducible 0.19 s, frame 0.29 s, the
frame validations taking turns with the other extractors'), against base 0.02, 0.005 and 0.005 s,
and ``extractors_invariants`` took 0.28-0.37 -> 0.10-0.14 s for its checks."""

# Few entries: the planner's own choice, nested loops over the primary keys.
UNGROUNDED_FEW = sa.text(
    """
    SELECT s.artifact_id FROM staged_entry s
     WHERE s.sha = :sha AND s.extractor_id = :extractor_id
    EXCEPT
    SELECT d.artifact_id FROM staged_entry s
      JOIN artifact_derived_from d ON d.artifact_id = s.artifact_id
      JOIN commit_file f ON f.sha = s.sha AND f.path = d.path
      JOIN blob_span b ON b.blob_id = f.blob_id AND b.parser_version = :parser_version
                      AND b.span_id = d.span_id
     WHERE s.sha = :sha AND s.extractor_id = :extractor_id
    ORDER BY 1
    """
).columns(sa.column("artifact_id", HexId()))

# Many entries: the commit's occurrences are built first (one hash of ~58k rows on Django), and so
# is the staged set; only the set's own grounding rows are joined to them. Left to itself, with no
# statistics for a fresh sha, the planner joined blob_span on span_id alone before the commit's
# files: 1.3M intermediate rows and 1.6-3 s for the 76k call edges of a one-file Django commit,
# against 0.7-1.1 s with the occurrences first. Joining every grounding row of the store to them
# (``NOT EXISTS`` per staged entry) cost the same for the 11k import edges as for the 76k call
# edges (0.39-0.44 s on a store of one Django commit) and grew with the store; from the staged
# set, 0.11 s for the import edges and 0.51 s for the call edges. The staged ids that have a
# grounded row are then found by a hash anti-join (merge joins off), not by sorting both sides
# (``EXCEPT``, or the merge join the planner takes for ``NOT EXISTS``): it cannot count a fresh
# sha's staged entries (170 estimated for 76k), so it sorted the call edges' 320k grounded rows:
# 0.37 s in all, 0.26 s hashed, on a store of one Django commit.
UNGROUNDED_MANY = sa.text(
    """
    WITH occurrence AS MATERIALIZED (
      SELECT f.path, b.span_id FROM commit_file f
        JOIN blob_span b ON b.blob_id = f.blob_id AND b.parser_version = :parser_version
       WHERE f.sha = :sha),
    staged AS MATERIALIZED (
      SELECT s.artifact_id FROM staged_entry s WHERE s.sha = :sha AND s.extractor_id = :extractor_id)
    SELECT st.artifact_id FROM staged st
     WHERE NOT EXISTS (
       SELECT 1 FROM staged g
         JOIN artifact_derived_from d ON d.artifact_id = g.artifact_id
         JOIN occurrence o ON o.path = d.path AND o.span_id = d.span_id
        WHERE d.artifact_id = st.artifact_id)
    ORDER BY 1
    """
).columns(sa.column("artifact_id", HexId()))


def staged_count(conn: sa.Connection, sha: str, extractor_id: str) -> int:
    """How many entries an extractor staged for ``sha`` (the sizes of its parts' sets)."""
    return staged_total(conn, sha, [extractor_id])


@contextmanager
def _staged_set_plan(
    conn: sa.Connection, sha: str, extractor_id: str, *, merge_joins: bool = True
) -> Iterator[bool]:
    """Plan a read of a whole staged set by its size (``whole_snapshot_plan`` for a large one);
    yields whether it is a large one."""
    if staged_count(conn, sha, extractor_id) <= FEW_STAGED:
        yield False
        return
    with whole_snapshot_plan(conn, merge_joins=merge_joins):
        yield True


def staged_artifact_ids(conn: sa.Connection, sha: str, extractor_id: str) -> list[str]:
    """The artifact ids an extractor staged for the snapshot of ``sha``, sorted."""
    query = (
        sa.select(staged_entry.c.artifact_id)
        .where(staged_entry.c.sha == sha, staged_entry.c.extractor_id == extractor_id)
        .order_by(staged_entry.c.artifact_id)
    )
    return list(conn.scalars(query))


def staged_exactly(conn: sa.Connection, sha: str, extractor_id: str, artifact_ids: Collection[str]) -> bool:
    """Whether what the extractor staged for ``sha`` is exactly ``artifact_ids``, compared set by
    set (their ids are the hashes of their members: ~530 rows read for Django's call edges, not
    76k ids). Then every one of them is stored: a set's members reference stored artifacts, and
    an artifact a set holds cannot be deleted (``schema.STATEMENT_REFERENCES``)."""
    expected = [(s.prefix, s.set_id) for s in entry_sets(artifact_ids)]
    query = (
        sa.select(staged_part.c.prefix, staged_part.c.set_id)
        .where(staged_part.c.sha == sha, staged_part.c.extractor_id == extractor_id)
        .order_by(staged_part.c.prefix.collate("C"))
    )
    return [(prefix, set_id) for prefix, set_id in conn.execute(query).all()] == expected


def staged_total(conn: sa.Connection, sha: str, extractor_ids: Collection[str]) -> int:
    """How many entries the extractors ``extractor_ids`` staged for ``sha`` (one per extractor and
    artifact): the sizes of their parts' sets, summed by the server without reading a member."""
    return entry_count(conn, staged_part, sha, extractor_ids)


def staged_sample(
    conn: sa.Connection, sha: str, extractor_id: str, size: int, *, since: str | None = None
) -> list[str]:
    """``size`` of the ids an extractor staged for ``sha`` (all when ``size`` < 0), chosen as
    ``kb_gates.history.stable_sample`` chooses them (by sha256 of ``"<sha>:<id>"``) but inside
    the server, so a gate that samples 2,000 of 76,000 ids does not fetch the other 74,000.
    With ``since`` (a proven base, see ``staged_delta``), only ids the base's snapshot lacks."""
    chosen = _staged_or_new(sha, extractor_id, since)
    spelled = sa.func.encode(chosen.c.artifact_id, "hex")  # the id as hashed outside the server
    key = sa.func.sha256(sa.func.convert_to(sa.literal(sha + ":") + spelled, "UTF8"))
    query = sa.select(chosen.c.artifact_id).order_by(key)
    if size >= 0:
        query = query.limit(size)
    return list(conn.scalars(query))


def staged_payloads(conn: sa.Connection, sha: str, extractor_id: str) -> list[dict[str, Any]]:
    """The payloads of what an extractor staged for ``sha``, in artifact id order (for oracles)."""
    query = (
        sa.select(artifact.c.payload)
        .join(staged_entry, staged_entry.c.artifact_id == artifact.c.artifact_id)
        .where(staged_entry.c.sha == sha, staged_entry.c.extractor_id == extractor_id)
        .order_by(artifact.c.artifact_id)
    )
    return list(conn.scalars(query))


GROUNDING_BATCH = 10_000
"""Rows per batch of ``staged_grounding_batches``."""


def staged_grounding_batches(
    conn: sa.Connection, sha: str, extractor_id: str, *, since: str | None = None
) -> Iterator[list[tuple[str, str, int]]]:
    """(artifact_id, logical_key, grounding rows) of each staged artifact, for the frame checks, in
    batches of ``GROUNDING_BATCH`` rows in artifact id order; with ``since`` (a proven base), of
    those the base's snapshot lacks. Streamed from the server: the frame check turns each batch
    into columns and drops it, so the rows of a whole large set (Django's 75,908 call edges: ~16 MiB
    of tuples, where a full index reached its peak) never exist at once. An artifact's row and its
    grounding rows never change once written, so with ``since`` the base's check already covered
    the others.

    A large set's rows are counted by one hash aggregate over its grounding rows (``_grounding_counts``),
    a small set's (and ``since``'s few) by a correlated count per artifact on the ``artifact_id`` index of
    ``artifact_derived_from``. Under the large-set plan (``whole_snapshot_plan``: hash joins, 64 MB
    of ``work_mem``) the aggregate stays in memory: Django's call edges (~347k grounding rows)
    took 0.53-0.58 s instead of 1.1-1.3 s for 75,908 probes (stop 30; at the default 4 MB, before
    that plan existed, the aggregate had sorted on disk and lost, 1.1-1.3 s against 0.6 s).
    """
    ids = _staged_or_new(sha, extractor_id, since)
    # with ``since``, few rows: the planner's own index probes
    with _staged_set_plan(conn, sha, extractor_id) if since is None else nullcontext(False) as many:
        query = _grounding_counts(ids, aggregate=many)
        result = conn.execute(query.execution_options(yield_per=GROUNDING_BATCH))
        for batch in result.partitions():
            yield [(aid, key, int(count)) for aid, key, count in batch]


def _grounding_counts(ids: sa.Subquery, *, aggregate: bool) -> sa.Select[Any]:
    """(artifact_id, logical_key, grounding rows) of the artifacts ``ids`` names, in id order:
    counted by one aggregate over their grounding rows, or by a correlated count per artifact
    (``staged_grounding_batches``). An artifact without grounding keeps its row, counted 0: it is
    what the frame check is there to see."""
    a, d = artifact.c, artifact_derived_from.c
    query = (
        sa.select(a.artifact_id, a.logical_key)
        .select_from(ids)
        .join(artifact, a.artifact_id == ids.c.artifact_id)
    )
    if aggregate:
        counts = (
            sa.select(d.artifact_id, sa.func.count().label("rows"))
            .select_from(artifact_derived_from.join(ids, ids.c.artifact_id == d.artifact_id))
            .group_by(d.artifact_id)
            .subquery()
        )
        query = query.add_columns(sa.func.coalesce(counts.c.rows, 0)).outerjoin(
            counts, counts.c.artifact_id == ids.c.artifact_id
        )
    else:
        query = query.add_columns(
            sa.select(sa.func.count()).where(d.artifact_id == ids.c.artifact_id).scalar_subquery()
        )
    return query.order_by(a.artifact_id)


def ungrounded_staged(
    conn: sa.Connection, sha: str, extractor_id: str, parser_version: str, *, since: str | None = None
) -> list[str]:
    """Staged artifacts of ``sha`` with no grounding row that names an occurrence at ``sha``
    (located with the pipeline's ``parser_version``: the snapshot is not published yet). With
    ``since`` (a proven base), only the unproven subset is read (``staged_delta``)."""
    params = {"sha": sha, "extractor_id": extractor_id, "parser_version": parser_version}
    if since is not None:
        return list(conn.scalars(UNGROUNDED_SINCE, {**params, "base": since}))
    with _staged_set_plan(conn, sha, extractor_id, merge_joins=False) as many:
        return list(conn.scalars(UNGROUNDED_MANY if many else UNGROUNDED_FEW, params))


def _staged_or_new(sha: str, extractor_id: str, since: str | None) -> sa.Subquery:
    """The extractor's staged ids at ``sha``, or only those new since the proven base ``since``."""
    s = staged_entry.c
    staged = sa.select(s.artifact_id).where(s.sha == sha, s.extractor_id == extractor_id)
    return (staged if since is None else new_since(sha, extractor_id, since)).subquery()


def delta_base(
    conn: sa.Connection, sha: str, extractor_id: str, base: str | None, parser_version: str
) -> str | None:
    """The base to check a staged set of more than ``DELTA_MIN_STAGED`` entries against
    (``since``), or None to read the whole set."""
    if base is None or staged_count(conn, sha, extractor_id) <= DELTA_MIN_STAGED:
        return None
    return proven_base(conn, sha, base, parser_version)


def grounded_base(
    conn: sa.Connection, sha: str, extractor_id: str, base: str | None, parser_version: str
) -> str | None:
    """``delta_base`` for ``every_artifact_grounded``, which reads against the base only while few
    of its files changed (``staged_delta.GROUNDED_DELTA_MAX_CHANGED``): after a large change the
    whole set is cheaper to read than the base artifacts the change touched."""
    since = delta_base(conn, sha, extractor_id, base, parser_version)
    if (
        since is None
        or staged_delta.changed_share(conn, sha, since) > staged_delta.GROUNDED_DELTA_MAX_CHANGED
    ):
        return None
    return since


def snapshot_artifact_ids(conn: sa.Connection, sha: str) -> list[str]:
    """The artifact ids of the published snapshot of ``sha``, sorted."""
    query = (
        sa.select(snapshot_entry.c.artifact_id)
        .where(snapshot_entry.c.sha == sha)
        .order_by(snapshot_entry.c.artifact_id)
    )
    return list(conn.scalars(query))


def snapshot_digest(conn: sa.Connection, sha: str) -> str:
    """A digest of the published snapshot of ``sha`` read from its ~530 parts, not its 88k ids.

    sha256 over the sorted ``extractor_id``, prefix and set id of each part: a set id is the hash
    of its sorted ids (``entry_sets``), so this is a Merkle digest of the snapshot's ids per
    extractor: equal snapshots give equal digests and any changed id changes it. Reading and
    hashing every id instead took 0.23-0.28 s of each Django publish."""
    p = snapshot_part.c
    query = sa.select(p.extractor_id, p.prefix, p.set_id).where(p.sha == sha)
    rows = sorted("\t".join(map(str, row)) for row in conn.execute(query))
    return hashlib.sha256("\n".join(rows).encode("utf-8")).hexdigest()


def snapshot_parser_version(conn: sa.Connection, sha: str) -> str | None:
    """The parser version whose blob spans locate the published snapshot of ``sha``."""
    return conn.scalar(sa.select(commit_ref.c.parser_version).where(commit_ref.c.sha == sha))


def commit_stats(conn: sa.Connection, sha: str) -> dict[str, Any] | None:
    """The stats stored when ``sha`` was published (None if it is not published)."""
    query = sa.select(commit_ref.c.stats).where(
        commit_ref.c.sha == sha, commit_ref.c.published_at.is_not(None)
    )
    stats = conn.scalar(query)
    return dict(stats) if stats is not None else None


def occurrence_count(conn: sa.Connection, sha: str, parser_version: str) -> int:
    """How many span occurrences commit ``sha`` has, located with ``parser_version`` (the rows
    ``schema.occurrences`` would give), counted one index probe per file: a blob's spans are
    written together and numbered from 0 (``writes.insert_encoded_blobs``), so a file has its
    blob's highest ordinal + 1 of them (Django: ~9 ms for 2,823 files instead of ~70 ms over their
    58k spans, on every commit's publish)."""
    f, b = commit_file.c, blob_span.c
    spans = (
        sa.select(sa.func.max(b.ordinal) + 1)
        .where(b.blob_id == f.blob_id, b.parser_version == parser_version)
        .scalar_subquery()
    )
    return int(conn.scalar(sa.select(sa.func.coalesce(sa.func.sum(spans), 0)).where(f.sha == sha)) or 0)


def occurrence_digest(conn: sa.Connection, sha: str, parser_version: str) -> str | None:
    """sha256 naming the occurrences of ``sha`` located with ``parser_version``; None when it has none.

    A commit's occurrences are its files joined with their blobs' cached spans, and a blob's spans
    are a function of its id and the parser version (``blob_span`` is written once per pair, and
    the ``blob_cache_reproduces`` check holds the cache to that). So the files that have spans,
    each hashed as ``path NUL blob_id LF`` in path order after the parser version and a LF, name
    the occurrences exactly while reading one row per file instead of one per span (Django: 2,823
    rows instead of 58,165, ~0.2 s less on every commit's ``code_spans`` step).
    """
    f, b = commit_file.c, blob_span.c
    has_spans = sa.exists().where(b.blob_id == f.blob_id, b.parser_version == parser_version)
    query = sa.select(f.path, f.blob_id).where(f.sha == sha, has_spans).order_by(f.path.collate("C"))
    rows = conn.execute(query).all()
    if not rows:
        return None
    digest = hashlib.sha256(f"occurrences:{parser_version}\n".encode())
    for path, blob_id in rows:
        digest.update(f"{path}\x00{blob_id}\n".encode())
    return digest.hexdigest()
