"""Turning drafts into artifacts: the application half of the provenance invariant.

Nothing becomes an ``Artifact`` unless every grounding edge names a span that really occurs at
that path in the commit, and at least one such edge exists. The database enforces the same rule
again at COMMIT (``artifact_grounded_check``) for anything that bypasses this module.
"""

from __future__ import annotations

from collections.abc import Iterable

from kb_assets.core.errors import GroundingError, IdentityConflictError
from kb_assets.core.extractors.base import Draft
from kb_assets.core.ids import ArtifactIds
from kb_assets.core.models import Artifact, Grounding, Method
from kb_assets.core.program import Program

_last: tuple[Program, frozenset[tuple[str, str]]] | None = None


def known_occurrences(program: Program) -> frozenset[tuple[str, str]]:
    """Every (path, span_id) pair of the commit, for validating grounding edges.

    Remembered for the last program (held, so it cannot be another object at a reused address):
    every extractor of a commit, and its reproducibility check, validate against the same set.
    """
    global _last  # noqa: PLW0603 - a one-entry cache of a pure function of an immutable program
    if _last is not None and _last[0] is program:
        return _last[1]
    found = frozenset((f.path, s.span_id) for f in program.files.values() for s in f.spans)
    _last = (program, found)
    return found


def _grounding_order(g: Grounding) -> tuple[str, str, str]:
    """``Grounding``'s own (dataclass) order as a plain tuple key: the same order, sorted without
    a generated ``__lt__`` call per comparison."""
    return (g.span_id, g.path, g.role)


def check_grounding(draft: Draft, occurrences: frozenset[tuple[str, str]]) -> tuple[Grounding, ...]:
    """The draft's grounding, de-duplicated and sorted; raises if empty or pointing nowhere."""
    rows = tuple(sorted(set(draft.grounding), key=_grounding_order))
    if not rows:
        raise GroundingError(draft.logical_key)
    for g in rows:
        if (g.path, g.span_id) not in occurrences:
            raise GroundingError(draft.logical_key, f"span {g.span_id[:12]} does not occur in {g.path}")
    return rows


def build_artifacts(
    drafts: Iterable[Draft],
    *,
    extractor_id: str,
    extractor_version: str,
    program: Program,
    method: Method = Method.DETERMINISTIC,
) -> list[Artifact]:
    """Give each draft its content-addressed id; sorted by (kind, logical_key) for determinism.

    The ids are made by one ``ArtifactIds``: drafts of one extractor share most grounding edges,
    and it encodes each edge once (same bytes hashed as ``ids.artifact_id``)."""
    occurrences = known_occurrences(program)
    ids = ArtifactIds()
    seen: dict[tuple[str, str], Artifact] = {}
    for draft in drafts:
        grounding = check_grounding(draft, occurrences)
        art = Artifact(
            artifact_id=ids.artifact_id(
                logical_key=draft.logical_key,
                extractor_id=extractor_id,
                extractor_version=extractor_version,
                grounding=grounding,
                payload=draft.payload,
            ),
            kind=draft.kind,
            logical_key=draft.logical_key,
            extractor_id=extractor_id,
            extractor_version=extractor_version,
            method=method,
            confidence=draft.confidence,
            payload=draft.payload,
            grounding=grounding,
        )
        key = (draft.kind, draft.logical_key)
        if key in seen and seen[key].artifact_id != art.artifact_id:
            raise IdentityConflictError("logical key", f"{draft.kind} {draft.logical_key}")
        seen[key] = art
    return [seen[k] for k in sorted(seen)]
