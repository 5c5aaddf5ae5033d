"""Publish: make a commit's staged knowledge its snapshot, atomically.

Readers either see the previous snapshot of the commit or this one, never a mix; a run that fails
before this step leaves every snapshot exactly as it was.
"""

from __future__ import annotations

from typing import NamedTuple

from sqlalchemy import Engine

from kb_assets.core.extractors.registry import EXTRACTORS, parser_version
from kb_assets.core.llm.units import MODEL_PASS_IDS
from kb_assets.core.models import Gap
from kb_assets.core.summary import IndexStats
from kb_resources.store import reads, writes


class Published(NamedTuple):
    """What publishing a commit made visible, for the snapshot's metadata."""

    stats: IndexStats
    counts: dict[str, int]
    """Artifacts of the snapshot by kind."""
    gaps: list[Gap]
    digest: str
    """The snapshot's data version (``reads.snapshot_digest``), read in the publishing transaction."""


def publish_commit(
    engine: Engine, sha: str, *, mode: str, base_sha: str | None, files: int, parsed: int, reused: int
) -> Published:
    """Publish the staged artifacts of every registered extractor as the commit's snapshot."""
    with engine.begin() as conn:
        staged = reads.staged_total(conn, sha, [ex.extractor_id for ex in EXTRACTORS])
        spans = reads.occurrence_count(conn, sha, parser_version())
        gaps = reads.gaps(conn, sha)
        stats = IndexStats(
            sha=sha,
            mode=mode,
            base_sha=base_sha,
            files=files,
            parsed=parsed,
            reused=reused,
            spans=spans,
            artifacts=staged,
            gaps=len(gaps),
        )
        writes.publish_snapshot(
            conn,
            sha,
            mode=mode,
            base_sha=base_sha,
            stats=stats.as_json(),
            parser_version=parser_version(),
            extractor_ids=[*(ex.extractor_id for ex in EXTRACTORS), *MODEL_PASS_IDS],
        )
        counts = reads.artifact_counts(conn, sha)
        digest = reads.snapshot_digest(conn, sha)
    return Published(stats, counts, gaps, digest)
