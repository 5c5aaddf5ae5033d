"""Extract: run one registered extractor over a commit and stage its artifacts.

Artifacts are content-addressed, so writing them is idempotent; what makes them part of the
commit's knowledge is the staged entry, published atomically later by the snapshot step.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import Engine

from kb_assets.core.extractors.base import Extractor
from kb_assets.core.grounding import build_artifacts
from kb_assets.core.models import Artifact, Gap
from kb_assets.core.program import Program
from kb_resources.store import writes


@dataclass(frozen=True, slots=True)
class ExtractResult:
    """What one extractor produced for one commit."""

    artifacts: tuple[Artifact, ...]
    gaps: tuple[Gap, ...]

    @property
    def data_version(self) -> str:
        """Digest of the artifact ids: Dagster's data version for this asset partition."""
        return ids_digest(a.artifact_id for a in self.artifacts)


def ids_digest(ids: Iterable[str]) -> str:
    """Order-independent digest of a set of ids."""
    h = hashlib.sha256()
    for artifact_id in sorted(set(ids)):
        h.update(artifact_id.encode("ascii"))
    return h.hexdigest()


def run_extractor(extractor: Extractor, program: Program) -> ExtractResult:
    """Resolve and identify, without touching the store (also used by the reproducibility gate)."""
    extraction = extractor.resolve(program)
    artifacts = build_artifacts(
        extraction.drafts,
        extractor_id=extractor.extractor_id,
        extractor_version=extractor.version,
        program=program,
    )
    return ExtractResult(artifacts=tuple(artifacts), gaps=extraction.gaps)


def extract_commit(engine: Engine, program: Program, extractor: Extractor) -> ExtractResult:
    """Run the extractor and stage its artifacts and gaps for the commit, in one transaction."""
    result = run_extractor(extractor, program)
    with engine.begin() as conn:
        writes.insert_artifacts(conn, result.artifacts)
        writes.replace_staged(
            conn, program.sha, extractor.extractor_id, [a.artifact_id for a in result.artifacts]
        )
        writes.replace_gaps(conn, program.sha, extractor.extractor_id, result.gaps)
    return result
