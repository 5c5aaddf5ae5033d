"""Every write the pipeline makes to the knowledge store: bulk, idempotent, in the caller's transaction.

Content-addressed rows (spans, parsed blobs, artifacts, grounding, entry sets) are inserted with
``ON CONFLICT DO NOTHING``, so writing them twice changes nothing; per-commit rows (files, gaps,
staged and published parts naming entry sets) are replaced wholesale. Nothing here commits: the caller owns
the transaction, which is what makes publishing a snapshot atomic.

Replacing a commit's rows is delete-then-insert, which two writers of the same commit (two
``kb index`` runs, or the sensor and the CLI) would interleave into a duplicate-key error: each
such write therefore first takes a transaction-scoped advisory lock on the commit, so writers of
one commit take turns and the second simply rewrites the same rows.
"""

from __future__ import annotations

import zlib
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as pg_insert

from kb_assets.core.errors import GroundingError
from kb_assets.core.json_text import canonical_json
from kb_assets.core.models import JSON, Artifact, EncodedBlob, Gap
from kb_resources.store.bulk import (
    LoadLog,
    analyze_if_large,
    copy_loaded_rows,
    copy_new_rows,
    copy_rows,
    insert_missing_keys,
    insert_new_keys,
    stored_keys,
)
from kb_resources.store.entry_sets import EntrySet, entry_count, entry_sets
from kb_resources.store.schema import (
    ARTIFACT_RECORD_COLUMNS,
    artifact_derived_from,
    branch_ref,
    commit_file,
    commit_ref,
    gap,
    snapshot_part,
    staged_part,
)
from kb_resources.store.statistics import analyze

SPAN_LANG = "python"
COMMIT_LOCK_SPACE = 0x6B62_636D  # "kbcm": the first key of every per-commit advisory lock

CommitFileRow = tuple[str, str, str, int, str | None, bool]
"""(path, blob_id, mode, size, module or None, is_package)."""


def upsert_commit(
    conn: sa.Connection, *, sha: str, tree_id: str, parents: Sequence[str], committed_at: datetime
) -> None:
    """Record a commit (its content never changes, so an existing row is kept as is)."""
    statement = pg_insert(commit_ref).values(
        sha=sha, tree_id=tree_id, parents=list(parents), committed_at=committed_at
    )
    conn.execute(statement.on_conflict_do_nothing(index_elements=["sha"]))


def lock_commit(conn: sa.Connection, sha: str) -> None:
    """Wait for, then hold until the transaction ends, the right to replace commit ``sha``'s rows.

    Re-entrant within a transaction. Two-key advisory locks live apart from the single-key
    migration lock; the second key is a 32-bit digest of the sha (a collision only serializes).
    """
    key = zlib.crc32(sha.encode()) - 2**31
    conn.execute(sa.select(sa.func.pg_advisory_xact_lock(COMMIT_LOCK_SPACE, key)))


COMMIT_FILE_ANALYZED = ("sha", "path", "blob_id")
"""The ``commit_file`` columns a commit's load re-analyzes: every query filters or joins on these
only (the module, mode, size and package flag are only selected). On Django's table at 37
commits (104k rows): 70-82 ms, against 116-146 ms for every column."""

COMMIT_FILE_STATISTICS = 10
"""The statistics target of that analysis: 3,000 sampled rows instead of the default 30,000. On
Django's table at 49 commits (138k rows) it took 23-25 ms instead of 142-144 ms, on every commit's
path, and the estimates the checks' plans use stay close: the newest commit's files 2,802 rows
(2,869-2,947 at the default; 2,824 in fact), distinct paths 2,720 (2,824), blob ids 1,904
(2,205-2,208). What shrinks is the lists of most common values (the sha's 49 -> 1, the path's
11-15 -> 0), which matter for values much more frequent than others: each commit's sha, path and
blob id are about as frequent as the others'."""


def replace_commit_files(conn: sa.Connection, sha: str, rows: Iterable[CommitFileRow]) -> int:
    """Make ``rows`` the files of commit ``sha``; return how many were written.

    The table's planner statistics are refreshed at once: every later read of this commit joins
    its files, and with no statistics for a new sha the planner takes it for one file. On a
    one-file Django commit it then paired each of 1,149 staged symbols with each of 2,823 files
    (3.2M index probes, 11-16 s for one grounding check instead of 0.08 s). The columns queries
    filter and join on (``COMMIT_FILE_ANALYZED``), not only ``sha`` (33 ms): with the path and
    blob-id statistics of a store's first commit only, its second commit's code-span, import-edge
    and call-edge checks took 0.49-0.66 s each instead of under 0.3 s (stop 27).
    """
    lock_commit(conn, sha)
    conn.execute(sa.delete(commit_file).where(commit_file.c.sha == sha))
    columns = ("sha", "path", "blob_id", "mode", "size", "module", "is_package")
    written = copy_rows(conn, "commit_file", columns, ((sha, *row) for row in rows))
    analyze(conn, "commit_file", COMMIT_FILE_ANALYZED, target=COMMIT_FILE_STATISTICS)
    return written


def insert_encoded_blobs(
    conn: sa.Connection, parser_version: str, blobs: Iterable[EncodedBlob], *, log: LoadLog | None = None
) -> int:
    """Cache the parse of each blob (facts as encoded by ``blobs.encode_facts``, gaps, spans) under
    ``parser_version``; return how many blobs were new. With a ``log``, the tables' statistics
    are left for the caller to refresh once its whole load is written."""
    blob_rows: list[tuple[object, ...]] = []
    span_rows: dict[str, tuple[str, str, str, str]] = {}
    placement_rows: list[tuple[object, ...]] = []
    for blob in {b.blob_id: b for b in blobs}.values():  # a blob given twice is written once
        gaps = [{"reason": g.reason, "detail": g.detail, "line": g.line} for g in blob.gaps]
        blob_rows.append((blob.blob_id, parser_version, blob.line_count, blob.facts, canonical_json(gaps)))
        for ordinal, span in enumerate(blob.spans):
            span_rows[span.span_id] = (span.span_id, SPAN_LANG, str(span.kind), span.fq_symbol_path)
            placement_rows.append(
                (blob.blob_id, parser_version, ordinal, span.span_id, span.start_line, span.end_line)
            )
    span_columns = ("span_id", "lang", "kind", "fq_symbol_path")
    copy_new_rows(conn, "code_span", span_columns, span_rows.values(), order_by=("span_id",), log=log)
    blob_columns = ("blob_id", "parser_version", "line_count", "facts", "gaps")
    blob_rows.sort(key=lambda row: str(row[0]))  # blobs the cache lacked (a forced re-parse aside)
    fresh = insert_missing_keys(conn, "parsed_blob", blob_columns, lambda: blob_rows, key="blob_id", log=log)
    # A blob's placements go in with its parsed_blob row, in one transaction: only those of the
    # blobs this statement inserted are sent, by a plain COPY (no other writer can have any): on a
    # full Django index 0.55 s of statements instead of 0.84 s through a staged ``ON CONFLICT``.
    placement_columns = ("blob_id", "parser_version", "ordinal", "span_id", "start_line", "end_line")
    placements = (row for row in placement_rows if row[0] in fresh)
    copy_loaded_rows(conn, "blob_span", placement_columns, placements, log=log)
    return len(fresh)


def insert_artifacts(
    conn: sa.Connection, artifacts: Iterable[Artifact], *, log: LoadLog | None = None
) -> int:
    """Store artifacts with their grounding; raise ``GroundingError`` before writing if one has none.
    With a ``log``, the tables' statistics are left for the caller to refresh once (``LoadLog``)."""
    batch = list(artifacts)
    for item in batch:
        if not item.grounding:
            raise GroundingError(item.logical_key)
    # An artifact is content-addressed and stored together with its grounding in one transaction,
    # so a stored id already has every row this batch would send: a one-file commit re-derives
    # ~88k artifacts of Django of which a handful are new, and only those are serialized and sent.
    stored = stored_keys(conn, "artifact", "artifact_id", {a.artifact_id for a in batch})
    missing = sorted({a.artifact_id: a for a in batch if a.artifact_id not in stored}.items())
    if not missing:
        return 0

    def artifact_rows() -> Iterator[tuple[object, ...]]:  # serialized while COPY sends them
        for _, a in missing:
            yield (
                a.artifact_id,
                a.kind,
                a.logical_key,
                a.extractor_id,
                a.extractor_version,
                str(a.method),
                a.confidence,
                canonical_json(dict(a.payload)) if a.payload_json is None else a.payload_json,
                a.prompt_version,
                a.model_id,
            )

    inserted = insert_missing_keys(
        conn, "artifact", ARTIFACT_RECORD_COLUMNS, artifact_rows, key="artifact_id", log=log
    )
    # The grounding of the artifacts this statement inserted: no other transaction can have any.
    # Sent one artifact at a time in id order (``missing``: each artifact once; an artifact not
    # built by ``build_artifacts`` may repeat an edge: each row is sent once). This is what keeps
    # an artifact's rows distinct: the table has no key to refuse a repeat (migration 0009).
    rows = (
        (aid, *row)
        for aid, a in missing
        if aid in inserted
        for row in dict.fromkeys((g.span_id, g.path, g.role) for g in a.grounding)
    )
    columns = [c.name for c in artifact_derived_from.columns]  # (artifact id, span id, path, role)
    copy_loaded_rows(conn, artifact_derived_from.name, columns, rows, log=log)
    return len(inserted)


def store_entry_sets(conn: sa.Connection, sets: Sequence[EntrySet]) -> int:
    """Store the sets among ``sets`` that are not stored yet; return how many member rows that wrote.

    A set is content-addressed: the members of one already stored (by this commit's parent,
    typically) are not sent again, which is what makes a small commit's entries cost a few
    buckets. The set rows themselves (hundreds) all go to ``insert_new_keys``, which says which
    it inserted."""
    unique = {s.set_id: s for s in sets}
    rows = ((k, len(unique[k].members)) for k in sorted(unique))
    inserted = insert_new_keys(conn, "entry_set", ("set_id", "size"), rows, key="set_id")
    # The members of the sets this statement inserted: no other transaction can have any.
    members = ((k, aid) for k in sorted(inserted) for aid in unique[k].members)
    written = copy_rows(conn, "entry_set_member", ("set_id", "artifact_id"), members)
    analyze_if_large(conn, "entry_set_member", written)
    return written


def replace_staged(conn: sa.Connection, sha: str, extractor_id: str, artifact_ids: Iterable[str]) -> int:
    """Make ``artifact_ids`` what extractor ``extractor_id`` proposes for the snapshot of ``sha``;
    return how many distinct ids that is."""
    lock_commit(conn, sha)
    sets = entry_sets(artifact_ids)
    store_entry_sets(conn, sets)
    conn.execute(
        sa.delete(staged_part).where(staged_part.c.sha == sha, staged_part.c.extractor_id == extractor_id)
    )
    rows = ((sha, extractor_id, s.prefix, s.set_id) for s in sets)
    copy_rows(conn, "staged_part", ("sha", "extractor_id", "prefix", "set_id"), rows)
    return sum(len(s.members) for s in sets)


def _publish_parts(conn: sa.Connection, sha: str, extractor_ids: Collection[str] | None) -> int:
    """Copy the staged parts of ``sha`` (of ``extractor_ids`` only, when given) into its published
    ones, which the caller cleared; return how many entries they hold."""
    p = staged_part.c
    staged = sa.select(p.sha, p.extractor_id, p.prefix, p.set_id).where(p.sha == sha)
    if extractor_ids is not None:
        staged = staged.where(p.extractor_id.in_(sorted(set(extractor_ids))))
    columns = ["sha", "extractor_id", "prefix", "set_id"]
    conn.execute(sa.insert(snapshot_part).from_select(columns, staged.order_by(p.extractor_id, p.prefix)))
    return entry_count(conn, snapshot_part, sha, extractor_ids)


def publish_snapshot(
    conn: sa.Connection,
    sha: str,
    *,
    mode: str,
    base_sha: str | None,
    stats: Mapping[str, JSON],
    parser_version: str,
    extractor_ids: Collection[str] | None = None,
) -> int:
    """Make the staged entries of ``sha`` its snapshot; visible when the caller commits.

    Takes every extractor's entries, or only those of ``extractor_ids`` when given (so entries of
    an extractor that was removed from the registry are not published). ``parser_version`` names
    the blob spans that locate this snapshot's grounding (the ``span_occurrence`` view follows it).
    Publishing copies the staged parts (hundreds of rows), never the entries (``entry_sets``).
    """
    lock_commit(conn, sha)
    conn.execute(sa.delete(snapshot_part).where(snapshot_part.c.sha == sha))
    published = _publish_parts(conn, sha, extractor_ids)
    marked = conn.execute(
        sa.update(commit_ref)
        .where(commit_ref.c.sha == sha)
        .values(
            published_at=sa.func.now(),
            mode=mode,
            base_sha=base_sha,
            stats=dict(stats),
            parser_version=parser_version,
        )
    ).rowcount
    if marked != 1:
        raise LookupError(f"commit {sha} is not recorded; call upsert_commit first")
    return published


def publish_entries(conn: sa.Connection, sha: str, extractor_id: str) -> int:
    """Make the staged entries of ``extractor_id`` that extractor's part of the published snapshot of
    ``sha``, leaving every other extractor's entries as they are (model-backed passes add to a
    snapshot; they never republish it). Visible when the caller commits."""
    if conn.scalar(sa.select(commit_ref.c.published_at).where(commit_ref.c.sha == sha)) is None:
        raise LookupError(f"commit {sha} has no published snapshot to add to")
    s = snapshot_part.c
    conn.execute(sa.delete(snapshot_part).where(s.sha == sha, s.extractor_id == extractor_id))
    return _publish_parts(conn, sha, [extractor_id])


def replace_gaps(conn: sa.Connection, sha: str, source: str, gaps: Iterable[Gap]) -> int:
    """Make ``gaps`` what ``source`` (a parser or an extractor) did not understand at ``sha``."""
    lock_commit(conn, sha)
    conn.execute(sa.delete(gap).where(gap.c.sha == sha, gap.c.source == source))
    columns = ("sha", "source", "ordinal", "path", "reason", "detail", "line")
    rows = ((sha, source, i, g.path, g.reason, g.detail, g.line) for i, g in enumerate(gaps))
    return copy_rows(conn, "gap", columns, rows)


def set_branch(conn: sa.Connection, name: str, sha: str) -> None:
    """Point branch cursor ``name`` at ``sha`` (the newest commit followed on that branch)."""
    statement = pg_insert(branch_ref).values(name=name, sha=sha, updated_at=sa.func.now())
    conn.execute(
        statement.on_conflict_do_update(
            index_elements=["name"], set_={"sha": statement.excluded.sha, "updated_at": sa.func.now()}
        )
    )
