"""Turning stored artifacts into the units the tools return (export record + MCP fields).

The record part comes from ``kb_resources.store.knowledge_diff.export_unit``, which builds it with
``kb_assets.core.records`` exactly as ``kb export`` does, so the two never disagree about a unit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from kb_mcp.branch import BranchView
from kb_mcp.freshness import freshness_of
from kb_mcp.models import Freshness, Unit
from kb_mcp.snapshots import Entry
from kb_mcp.summaries import summarize
from kb_resources.store import reads
from kb_resources.store.knowledge_diff import export_unit


def unit_from_record(record: dict[str, Any], sha: str, freshness: Freshness, summary: str) -> Unit:
    """A ``Unit`` from an export record (with provenance) read at ``sha``."""
    return Unit(
        artifact_id=record["artifact_id"],
        kind=record["kind"],
        logical_key=record["logical_key"],
        method=record["method"],
        confidence=record["confidence"],
        summary=summary,
        provenance=record["provenance"],
        freshness=freshness,
        sha=sha,
        extractor=record["extractor"],
        payload=record["payload"],
        grounding=record["grounding"],
    )


def load_units(conn: sa.Connection, view: BranchView, sha: str, entries: Sequence[Entry]) -> list[Unit]:
    """Full units for ``entries`` of the snapshot of ``sha``, in order (read from memory; freshness
    needs the store only for a commit older than the branch's newest)."""
    if sha == view.newest:
        current = Freshness(status="current", as_of=sha, last_true_at=sha)
        fresh = {e.artifact_id: current for e in entries}
    else:
        fresh = freshness_of(conn, view, [(e.artifact_id, sha) for e in entries])
    return [
        unit_from_record(export_unit(e.record, sha), sha, fresh[e.artifact_id], e.summary) for e in entries
    ]


def load_unit_by_id(conn: sa.Connection, view: BranchView, sha: str, artifact_id: str) -> Unit | None:
    """One unit read at ``sha`` (None if the artifact is not stored)."""
    records = reads.records_by_id(conn, sha, [artifact_id])
    rec = records.get(artifact_id)
    if rec is None:
        return None
    fresh = freshness_of(conn, view, [(artifact_id, sha)])[artifact_id]
    summary = summarize(rec.kind, rec.logical_key, rec.payload)
    return unit_from_record(export_unit(rec, sha), sha, fresh, summary)
