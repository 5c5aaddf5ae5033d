"""How a commit's entries are stored: as content-addressed sets of artifact ids shared by commits.

A one-file commit of Django stages ~88k artifact ids, nearly all of them the parent's. Stored one
row per commit and id, twice (staged and published), that was ~80 MB per commit and a copy of
88k rows on every publish. Instead, an extractor's ids at a commit are cut into buckets by the
first hex digits of the id, and each bucket is stored once as a set named by the hash of its
members. A commit holds one *part* row per bucket (``staged_part``, ``snapshot_part``) naming its
set; a commit that changes a few ids writes only the few buckets they fall in, and publishing
copies part rows (hundreds), not entries. ``staged_entry`` and ``snapshot_entry`` are views that
expand the parts, so every reader sees the entries as before.

The bucket width grows with the set: ``prefix_width`` hex digits, about the square root of the
set's size in buckets of about its square root each, which keeps both the part rows per commit
and the rows a small change rewrites near ``sqrt(n)`` (Django's 40k call edges: 256 buckets of
~160). Both rules are locked by ``ENTRY_SET_VERSION``; migration 0006 applies the same rules in SQL.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from kb_assets.core.ids import sorted_distinct
from kb_resources.store.schema import entry_set

ENTRY_SET_VERSION = "1"
"""Names the set-id and bucket rules below; a change to either needs a new version and a migration."""


@dataclass(frozen=True, slots=True)
class EntrySet:
    """One bucket of an extractor's ids at a commit: ids sharing ``prefix``, named by ``set_id``."""

    prefix: str
    set_id: str
    members: tuple[str, ...]


def prefix_width(count: int) -> int:
    """How many leading hex digits of an id pick its bucket in a set of ``count`` ids.

    ``(bit_length + 3) // 8`` is log16 of the square root, rounded: one bucket below 16 ids, 16
    from 16, 256 from 4,096, 4,096 from 1,048,576."""
    return (count.bit_length() + 3) // 8


NAMED_SETS = 4096
"""Set ids remembered (``_set_id``): a watched Django commit cuts ~550 sets (256 each for the call
and import edges), so the sets of its last ~7 commits."""


@functools.lru_cache(maxsize=NAMED_SETS)
def _set_id(ordered: tuple[str, ...]) -> str:
    """The id of a set of artifact ids, given sorted and distinct: sha256 over the version and
    the ids, newline-separated.

    Remembered for the sets recent cuts made: a commit that changes a few ids cuts nearly all of
    its sets as the commit before did, and a set found by its members costs a hash of the member
    tuple (the ids' own hashes are cached) instead of a sha256 over them (Django's 76k staged
    call-edge ids: 15 ms a cut, ~7 ms with its sets remembered). The least recently cut sets are
    forgotten, so a long-running watch keeps the sets of its last few commits (the ids a set
    holds stay in memory while it is remembered)."""
    text = "\n".join([f"entry-set:{ENTRY_SET_VERSION}", *ordered])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def entry_sets(artifact_ids: Iterable[str]) -> list[EntrySet]:
    """``artifact_ids`` cut into their buckets, in prefix order (no empty bucket). Ids given sorted
    and distinct (a run stages them so) are taken as they are (``ids.sorted_distinct``).

    Each bucket is a slice of the sorted ids, found by bisection (``_bucket_end``): 76,000 random
    ids (Django's call edges are as many, and a watched commit cuts them once or twice) took
    59-70 ms with one dictionary append per id, and take 32-35 ms so."""
    ids = sorted_distinct(artifact_ids)
    width = prefix_width(len(ids))
    sets: list[EntrySet] = []
    start = 0
    while start < len(ids):
        prefix = ids[start][:width]
        end = _bucket_end(ids, prefix, start)
        members = ids[start:end]
        sets.append(EntrySet(prefix, _set_id(members), members))
        start = end
    return sets


_PAST_EVERY_CHARACTER = chr(0x10FFFF)


def _bucket_end(ids: Sequence[str], prefix: str, start: int) -> int:
    """Where the ids starting with ``prefix`` end in the sorted ``ids`` (they begin at ``start``):
    the first id that sorts after every string starting with it. Ids are lowercase hex (the
    store's check constraints), so none holds the last character that bound is made with."""
    return bisect.bisect_left(ids, prefix + _PAST_EVERY_CHARACTER, start)


def member_of(parts: str, row: str) -> str:
    """SQL (a fragment, for statements built from module constants only) that keeps each row of
    the FROM item ``row`` whose ``artifact_id`` is a member of a set the CTE ``parts`` names.

    One index probe per row (``entry_set_member``'s ``artifact_id`` index), fenced by ``LIMIT`` so
    PostgreSQL does not flatten it into a join: the sha of a just-written commit has no planner
    statistics, and the flattened plans hashed a whole snapshot's members instead (0.13-0.55 s on
    Django against a few ms for the rows of a small change). The probe's row (usually one set)
    is matched against an array of the parts' set ids made once per statement: joining the CTE
    there scanned its ~530 rows on every probe (62 instead of 10 µs a probe; ~50 ms of a Django
    commit's pairing, ``snapshot_reads.MOVES_QUERY``)."""
    return (
        "CROSS JOIN LATERAL (SELECT 1 FROM entry_set_member m"
        f" WHERE m.artifact_id = {row}.artifact_id AND m.set_id = ANY(ARRAY(SELECT set_id FROM {parts}))"
        " LIMIT 1) AS member"
    )


def entry_count(
    conn: sa.Connection, parts: sa.Table, sha: str, extractor_ids: Collection[str] | None = None
) -> int:
    """How many entries the ``parts`` (``staged_part`` or ``snapshot_part``) of ``sha`` hold, of
    ``extractor_ids`` only when given: their sets' sizes, summed without reading a member."""
    query = _sized(parts, sha, sa.func.coalesce(sa.func.sum(entry_set.c.size), 0))
    if extractor_ids is not None:
        query = query.where(parts.c.extractor_id.in_(sorted(set(extractor_ids))))
    return int(conn.scalar(query) or 0)


def entry_counts(conn: sa.Connection, parts: sa.Table, sha: str) -> dict[str, int]:
    """``entry_count`` per extractor: how many entries each extractor's parts of ``sha`` hold."""
    query = _sized(parts, sha, parts.c.extractor_id, sa.func.sum(entry_set.c.size))
    return {
        extractor_id: int(size) for extractor_id, size in conn.execute(query.group_by(parts.c.extractor_id))
    }


def _sized(parts: sa.Table, sha: str, *columns: sa.ColumnElement[Any]) -> sa.Select[Any]:
    """``columns`` over the ``parts`` of ``sha`` joined with the sets they name."""
    return (
        sa.select(*columns)
        .select_from(parts)
        .join(entry_set, entry_set.c.set_id == parts.c.set_id)
        .where(parts.c.sha == sha)
    )
