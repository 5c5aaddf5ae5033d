"""A published snapshot's orphan counts read against its base: only what the base did not prove.

``zero_orphans`` counts snapshot entries without grounding, grounding rows whose occurrence is
missing at the commit, and occurrences whose span is missing. When the base's own count was zero
on its current snapshot, an entry the two snapshots share needs no new count unless one of its
grounding rows is on a path whose blob changed (or is gone): its rows never change once written,
and a row on an unchanged path names the same occurrence at both commits (same blob, same parser
version). Occurrences on unchanged paths are the base's, and a span referenced by a blob's spans
cannot be deleted. So the unproven part is: entries new to the base, shared entries touched by the
change (found through the changed files' spans, as ``staged_delta`` does), every entry of a model
pass (those are added to a snapshot after its checks ran; a pass stages and publishes its entries
in one transaction, so they are its staged entries), and the occurrences on changed paths.
The caller vouches for the base (``kb_gates.checks``: its ``zero_orphans`` passed on its newest
snapshot, and ``staged_delta.proven_base``). Exposed through ``kb_resources.store.reads``.
"""

from __future__ import annotations

from collections.abc import Collection

import sqlalchemy as sa

from kb_resources.store.entry_sets import member_of
from kb_resources.store.snapshot_reads import ONE_SIDED_CTES
from kb_resources.store.staged_delta import TOUCHED_CTES

_ORPHANS_SINCE = (
    TOUCHED_CTES
    + ONE_SIDED_CTES
    + """,
    unproven AS MATERIALIZED (
      SELECT artifact_id FROM only_after
      UNION
      SELECT t.artifact_id FROM touched t """
    + member_of("after_parts", "t")
    + """
      UNION
      (SELECT s.artifact_id FROM staged_entry s
        WHERE s.sha = :sha AND s.extractor_id = ANY(:model_passes)
          AND EXISTS (SELECT 1 FROM snapshot_entry p WHERE p.sha = :sha AND p.artifact_id = s.artifact_id)))
    SELECT
      (SELECT count(*) FROM unproven u
         LEFT JOIN LATERAL (SELECT 1 AS hit FROM artifact_derived_from d
                             WHERE d.artifact_id = u.artifact_id LIMIT 1) g ON true
        WHERE g.hit IS NULL)
        AS entries_without_grounding,
      (SELECT count(*) FROM unproven u
        CROSS JOIN LATERAL (SELECT d.path, d.span_id FROM artifact_derived_from d
                             WHERE d.artifact_id = u.artifact_id OFFSET 0) d
         LEFT JOIN LATERAL (SELECT 1 AS hit FROM commit_file f
                              JOIN blob_span b ON b.blob_id = f.blob_id
                                              AND b.parser_version = :parser_version
                                              AND b.span_id = d.span_id
                             WHERE f.sha = :sha AND f.path = d.path LIMIT 1) o ON true
        WHERE o.hit IS NULL)
        AS grounding_without_occurrence,
      (SELECT count(*) FROM commit_file f
         JOIN blob_span b ON b.blob_id = f.blob_id AND b.parser_version = :parser_version
         LEFT JOIN LATERAL (SELECT 1 AS hit FROM code_span c WHERE c.span_id = b.span_id LIMIT 1) s ON true
        WHERE f.sha = :sha
          AND NOT EXISTS (SELECT 1 FROM commit_file o
                           WHERE o.sha = :base AND o.path = f.path AND o.blob_id = f.blob_id)
          AND s.hit IS NULL)
        AS occurrences_without_span
    """
)
ORPHANS_SINCE = sa.text(_ORPHANS_SINCE)
"""``snapshot_reads.ORPHAN_QUERY``'s three counts over the unproven part (module docstring). New
entries are ``snapshot_reads.ONE_SIDED_CTES``'s ``only_after``; the per-row
probes run over the touched and unproven entries and the changed files' spans only, few after a
small change. The probes of the unproven entries are ``LATERAL`` subqueries (``LIMIT 1``,
``OFFSET 0``), for the reason ``staged_delta.UNGROUNDED_SINCE`` gives (here: 67k unproven entries
guessed for 42, 5.8 s of a one-file commit's ``zero_orphans`` instead of milliseconds); so is the
changed files' spans' probe of ``code_span``: as a ``NOT EXISTS`` the planner anti-joined every
blob's spans with every span before narrowing to the changed files (68 of a one-file Django
commit's 76 ms; ~8 ms now)."""


def orphans_since(
    conn: sa.Connection, sha: str, *, base: str, parser_version: str, model_passes: Collection[str]
) -> dict[str, int]:
    """``snapshot_reads.orphans``' counts over what ``base`` does not prove (module docstring):
    ``parser_version`` locates both snapshots, ``model_passes`` are the extractor ids whose entries
    are always counted."""
    params = {
        "sha": sha,
        "base": base,
        "parser_version": parser_version,
        "model_passes": sorted(model_passes),
    }
    row = conn.execute(ORPHANS_SINCE, params).one()
    return {key: int(value) for key, value in row._mapping.items()}
