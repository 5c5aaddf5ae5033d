"""A commit's staged set read against a published base: only what the base did not already prove.

A one-file commit of a large repository stages ~88k artifacts, nearly all of them already in the
snapshot of the commit it was indexed against. What the blocking checks prove about an artifact
is either about its stored rows, which never change once written (a 64-hex id, a logical key, at
least one grounding row), or about its grounding at the commit: some grounding row names a span
occurrence there. The base's snapshot was published, so each of its artifacts passed those checks
at the base. A base artifact that is staged again therefore needs no new proof, unless one of the
grounding rows that located it at the base is on a path whose blob changed (or that is gone): a
row on an unchanged path names the same occurrence at both commits. The rest is *unproven*:
artifacts new to the base, and base artifacts touched by the change. The checks read that subset.

Exposed through ``kb_resources.store.reads``; ``commit_reads`` plans whole-set reads by size.
"""

from __future__ import annotations

import sqlalchemy as sa

from kb_resources.store.entry_sets import member_of
from kb_resources.store.hex_ids import HexId
from kb_resources.store.schema import commit_file, commit_ref

TOUCHED_CTES = """
    WITH changed AS MATERIALIZED (
      SELECT o.path, o.blob_id FROM commit_file o
       WHERE o.sha = :base
         AND NOT EXISTS (SELECT 1 FROM commit_file n
                          WHERE n.sha = :sha AND n.path = o.path AND n.blob_id = o.blob_id)),
    touched AS MATERIALIZED (
      SELECT DISTINCT d.artifact_id FROM changed c
        JOIN blob_span b ON b.blob_id = c.blob_id AND b.parser_version = :parser_version
        CROSS JOIN LATERAL (SELECT g.artifact_id FROM artifact_derived_from g
                             WHERE g.span_id = b.span_id AND g.path = c.path OFFSET 0) d),"""
"""The common start of the reads against a base (``:sha``, ``:base``, ``:parser_version``):
``changed``, the base's paths whose blob differs at the commit (or that are gone), and
``touched``, every artifact with a grounding row that named an occurrence on one of them at the
base, probed through the grounding rows' ``span_id`` index, so the cost follows the changed files'
spans, not the snapshot (a ``LATERAL`` subquery, which the planner cannot make a join over every
grounding row whatever it estimates; see ``UNGROUNDED_SINCE``). Statements are composed from
module constants only, never from values."""

NEW_STAGED_CTES = """
    staged AS (SELECT set_id FROM staged_part WHERE sha = :sha AND extractor_id = :extractor_id),
    held AS (SELECT set_id FROM snapshot_part WHERE sha = :base AND extractor_id = :extractor_id),
    new_staged AS MATERIALIZED (
      SELECT m.artifact_id FROM entry_set_member m
       WHERE m.set_id IN (SELECT set_id FROM staged EXCEPT SELECT set_id FROM held)
      EXCEPT
      SELECT m.artifact_id FROM entry_set_member m
       WHERE m.set_id IN (SELECT set_id FROM held EXCEPT SELECT set_id FROM staged))"""
"""``new_staged``: the extractor's staged ids at ``:sha`` that the snapshot of ``:base`` does not
hold, read set by set (``entry_sets``). A set both name holds the same ids, and an extractor's ids
sit in one of its sets only, so the answer is the members of the extractor's staged sets the base
does not name, minus the members of the base's sets of that extractor the commit does not name:
after a small change, a few buckets on each side, subtracted by one hash. (An id the base held
under another extractor counts as new: checked again, never skipped.) Expanding both whole sets
cost 75-116 ms on Django's call edges, probing each candidate in the base's snapshot 85 ms for a
change touching 53 of 530 sets; this is a few ms. Also defines ``staged`` and ``held``."""

_NEW_SINCE = (
    "WITH"
    + NEW_STAGED_CTES
    + """
    SELECT artifact_id FROM new_staged"""
)

_UNGROUNDED_SINCE = (
    TOUCHED_CTES
    + NEW_STAGED_CTES
    + """,
    unproven AS MATERIALIZED (
      SELECT artifact_id FROM new_staged
      UNION
      SELECT t.artifact_id FROM touched t """
    + member_of("staged", "t")
    + """)
    SELECT u.artifact_id FROM unproven u
      LEFT JOIN LATERAL (
        SELECT 1 AS hit FROM artifact_derived_from d
          JOIN commit_file f ON f.sha = :sha AND f.path = d.path
          JOIN blob_span b ON b.blob_id = f.blob_id AND b.parser_version = :parser_version
                          AND b.span_id = d.span_id
         WHERE d.artifact_id = u.artifact_id
         LIMIT 1) g ON true
     WHERE g.hit IS NULL
    ORDER BY 1
    """
)
UNGROUNDED_SINCE = sa.text(_UNGROUNDED_SINCE).columns(sa.column("artifact_id", HexId()))
"""``UNGROUNDED_FEW`` over the unproven subset (``TOUCHED_CTES`` finds the touched artifacts). The
new artifacts are ``NEW_STAGED_CTES``'s (0.12 s on Django's call edges when both whole sets were
expanded and subtracted, ~7 ms now); each touched artifact is looked up in
the staged sets by its own id (``entry_sets.member_of``); the
final probes are per unproven artifact, few after a small change. They are written as a ``LATERAL``
subquery with ``LIMIT 1``, which PostgreSQL cannot turn into a join: the planner cannot estimate
``new_staged`` (a set difference; 50k rows guessed for 0 on a Django store of 138 commits) and,
given a ``NOT EXISTS``, chose an anti-join that grounded every grounding row of the store (334k)
before matching the 34 unproven artifacts: 1.1-1.5 s per extractor instead of 0.02 s (stop 36)."""


def proven_base(conn: sa.Connection, sha: str, base: str | None, parser_version: str) -> str | None:
    """``base`` if its snapshot can stand as proof for ``sha``: another commit, published, and
    located with the same parser version (whose blob spans the unproven-set queries read)."""
    if not base or base == sha:
        return None
    c = commit_ref.c
    query = sa.select(c.sha).where(
        c.sha == base, c.published_at.is_not(None), c.parser_version == parser_version
    )
    return base if conn.scalar(query) is not None else None


GROUNDED_DELTA_MAX_CHANGED = 0.02
"""The share of the base's files that may have changed (or gone) for ``every_artifact_grounded``
to read the unproven subset; above it the whole staged set is read. Measured on Django (2,823
files, the call edges' and import edges' checks): one file changed, 0.06-0.16 s against
0.27-0.57 s for the whole set; 3 % (86 files), even; 10 %, two to three times slower (0.5-0.9 s);
a third or two thirds, five to nine times (1.7-3.3 s): every base artifact grounded on a changed
file is probed, one by one. The other delta reads (new artifacts only, changed files' spans)
stay cheaper at any size and keep the base."""


def changed_share(conn: sa.Connection, sha: str, base: str) -> float:
    """The share of ``base``'s files whose blob differs at ``sha`` or that are gone (0 for none)."""
    kept = sa.select(sa.func.count()).select_from(unchanged_paths(sha, base).subquery())
    query = sa.select(sa.func.count(), kept.scalar_subquery()).where(commit_file.c.sha == base)
    total, unchanged = conn.execute(query).one()
    return (total - unchanged) / total if total else 0.0


def new_since(sha: str, extractor_id: str, base: str) -> sa.TextualSelect:
    """The extractor's staged ids at ``sha`` that the snapshot of ``base`` does not hold
    (``NEW_STAGED_CTES``), as a statement other reads can nest."""
    statement = sa.text(_NEW_SINCE).bindparams(sha=sha, extractor_id=extractor_id, base=base)
    return statement.columns(sa.column("artifact_id", HexId()))


def _same_blob(base: str) -> tuple[sa.FromClause, sa.FromClause, sa.ColumnElement[bool]]:
    """A commit's files (``now``), ``base``'s (``then``), and the condition that a path of ``now``
    has the same blob at ``base``."""
    now, then = commit_file.alias("now"), commit_file.alias("then")
    return now, then, sa.and_(then.c.sha == base, then.c.path == now.c.path, then.c.blob_id == now.c.blob_id)


def unchanged_paths(sha: str, base: str) -> sa.Select[tuple[str]]:
    """Paths with the same blob at ``sha`` and at ``base``: their span occurrences are the same."""
    now, then, same = _same_blob(base)
    return sa.select(now.c.path).join(then, same).where(now.c.sha == sha)


def changed_paths(sha: str, base: str) -> sa.Select[tuple[str]]:
    """Paths whose blob at ``sha`` is not the one ``base`` has there (new paths too): the only
    paths whose span occurrences differ. Written as an anti-join, which the planner estimates
    at a few rows, so that a read narrowed by it probes these paths' spans by index: as ``NOT
    IN unchanged_paths`` it guessed half the commit's files and hashed every blob's spans (70-137
    ms on Django against ~5 ms)."""
    now, _, same = _same_blob(base)
    return sa.select(now.c.path).where(now.c.sha == sha, ~sa.exists().where(same))
