"""The knowledge diff between two indexed commits: units added, removed and changed, per kind.

Shared by ``kb diff`` and the MCP tool ``diff_knowledge`` so both print the same JSON. Identity
does the work: a unit whose artifact id is in both snapshots is unchanged (same grounding, same
content); ids only in HEAD are added, ids only in BASE removed, and an added and a removed unit
with the same kind and logical key are one *changed* unit. Each unit is shown as its export
record at its own commit (removed and ``before`` at BASE, added and ``after`` at HEAD) plus its
``provenance`` strings. ``as_json`` is stable: kinds, and units within a kind, sorted by logical
key (code point order), then artifact id.

JSON shape::

    {"base": SHA, "head": SHA,
     "kinds": {KIND: {"added": [UNIT...], "removed": [UNIT...],
                      "changed": [{"before": UNIT, "after": UNIT}...]}},
     "totals": {"added": N, "removed": N, "changed": N, "unchanged": N}}

where UNIT is an export record (CONTRACT.md) with one more key, ``provenance``
(``file:start-end@sha`` strings). Kinds with no difference are left out of ``kinds``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from kb_assets.core.errors import CheckFailedError
from kb_assets.core.extractors.base import LocatedGrounding
from kb_assets.core.models import JSON
from kb_assets.core.records import export_record, provenance
from kb_resources.store.serving_reads import records_by_id
from kb_resources.store.snapshot_reads import ArtifactRecord, snapshot_difference

Unit = dict[str, JSON]


def located(rec: ArtifactRecord) -> list[LocatedGrounding]:
    """The record's grounding placed at its commit; a missing occurrence is an orphan (refused)."""
    out = []
    for g in rec.grounding:
        if g.start_line is None or g.end_line is None:
            raise CheckFailedError(
                [f"{rec.logical_key}: span {g.span_id[:12]} has no occurrence in {g.path}"]
            )
        out.append(LocatedGrounding(g.span_id, g.path, g.role, g.start_line, g.end_line))
    return out


def export_unit(rec: ArtifactRecord, sha: str) -> Unit:
    """The export record of ``rec`` at commit ``sha``, plus its ``provenance`` strings."""
    grounding = located(rec)
    record = export_record(
        artifact_id=rec.artifact_id,
        kind=rec.kind,
        logical_key=rec.logical_key,
        extractor_id=rec.extractor_id,
        extractor_version=rec.extractor_version,
        method=rec.method,
        confidence=rec.confidence,
        payload=rec.payload,
        grounding=grounding,
    )
    record["provenance"] = list(provenance(grounding, sha))
    return record


def _order(unit: Unit) -> tuple[str, str]:
    """Units sort by logical key, then artifact id (code point order)."""
    return (str(unit["logical_key"]), str(unit["artifact_id"]))


@dataclass(frozen=True)
class KindDiff:
    """What changed in one kind of knowledge."""

    added: list[Unit] = field(default_factory=list)
    removed: list[Unit] = field(default_factory=list)
    changed: list[tuple[Unit, Unit]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        """This kind's part of the diff JSON, sorted."""
        return {
            "added": sorted(self.added, key=_order),
            "removed": sorted(self.removed, key=_order),
            "changed": [
                {"before": before, "after": after}
                for before, after in sorted(self.changed, key=lambda pair: _order(pair[1]))
            ],
        }


@dataclass(frozen=True)
class KnowledgeDiff:
    """The knowledge diff of two indexed commits (see the module docstring for its JSON)."""

    base: str
    head: str
    kinds: dict[str, KindDiff]
    unchanged: int

    def totals(self) -> dict[str, int]:
        """How many units were added, removed, changed and left unchanged, over all kinds."""
        return {
            "added": sum(len(k.added) for k in self.kinds.values()),
            "removed": sum(len(k.removed) for k in self.kinds.values()),
            "changed": sum(len(k.changed) for k in self.kinds.values()),
            "unchanged": self.unchanged,
        }

    def as_json(self) -> dict[str, Any]:
        """The diff as stable JSON (what ``kb diff --json`` prints)."""
        return {
            "base": self.base,
            "head": self.head,
            "kinds": {kind: self.kinds[kind].as_json() for kind in sorted(self.kinds)},
            "totals": self.totals(),
        }


def _by_identity(records: Iterable[ArtifactRecord]) -> dict[tuple[str, str], list[ArtifactRecord]]:
    """Records grouped by (kind, logical key)."""
    grouped: dict[tuple[str, str], list[ArtifactRecord]] = defaultdict(list)
    for rec in records:
        grouped[(rec.kind, rec.logical_key)].append(rec)
    return grouped


def knowledge_diff(conn: sa.Connection, base_sha: str, head_sha: str) -> KnowledgeDiff:
    """Compare the published snapshots of ``base_sha`` and ``head_sha`` (both must be published)."""
    difference = snapshot_difference(conn, base_sha, head_sha)
    removed = _by_identity(records_by_id(conn, base_sha, difference.removed).values())
    added = _by_identity(records_by_id(conn, head_sha, difference.added).values())
    kinds: dict[str, KindDiff] = defaultdict(KindDiff)
    for ident in sorted(set(removed) | set(added)):
        before, after = removed.get(ident, []), added.get(ident, [])
        diff = kinds[ident[0]]
        if len(before) == 1 and len(after) == 1:
            diff.changed.append((export_unit(before[0], base_sha), export_unit(after[0], head_sha)))
            continue
        diff.removed.extend(export_unit(rec, base_sha) for rec in before)
        diff.added.extend(export_unit(rec, head_sha) for rec in after)
    return KnowledgeDiff(base_sha, head_sha, dict(kinds), difference.unchanged)
