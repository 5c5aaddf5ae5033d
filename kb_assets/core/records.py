"""Export records: how a stored artifact is shown at one commit (CONTRACT.md's record shape).

Shared by ``kb export`` and the MCP server so both say exactly the same thing about a unit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kb_assets.core.extractors.base import LocatedGrounding
from kb_assets.core.extractors.registry import extractor_for_kind
from kb_assets.core.models import JSON


def render_payload(
    kind: str, payload: Mapping[str, JSON], grounding: Sequence[LocatedGrounding]
) -> dict[str, JSON]:
    """The payload with its location-derived fields filled in for this commit."""
    ex = extractor_for_kind(kind)
    return ex.render(payload, grounding) if ex is not None else dict(payload)


def export_record(
    *,
    artifact_id: str,
    kind: str,
    logical_key: str,
    extractor_id: str,
    extractor_version: str,
    method: str,
    confidence: float,
    payload: Mapping[str, JSON],
    grounding: Sequence[LocatedGrounding],
) -> dict[str, JSON]:
    """One export record (keys are sorted when serialized)."""
    ordered = sorted(grounding, key=lambda g: (g.path, g.start_line, g.end_line, g.role, g.span_id))
    return {
        "artifact_id": artifact_id,
        "kind": kind,
        "logical_key": logical_key,
        "extractor": {"id": extractor_id, "version": extractor_version},
        "method": method,
        "confidence": confidence,
        "payload": render_payload(kind, payload, ordered),
        "grounding": [
            {
                "span_id": g.span_id,
                "file": g.path,
                "start_line": g.start_line,
                "end_line": g.end_line,
                "role": g.role,
            }
            for g in ordered
        ],
    }


def provenance(grounding: Sequence[LocatedGrounding], sha: str) -> list[str]:
    """``file:start-end@sha`` strings, the form people and agents cite."""
    return sorted({f"{g.path}:{g.start_line}-{g.end_line}@{sha}" for g in grounding})
