"""Re-checking what a model pass published: every stored claim still passes the floor.

The passes run the floor before storing; this runs it again, independently, over the units the
pass contributes to a commit's snapshot, reading their grounding back from the store. It is the
body of the ``claims_backed`` asset checks, so the floor is verified on every run of every
repository, not only in the tests.
"""

from __future__ import annotations

from sqlalchemy import Engine

from kb_assets.core.llm.floor import CONFIDENCE_CEILING
from kb_assets.core.llm.reply import Claim
from kb_assets.core.models import Grounding
from kb_assets.core.program import Program
from kb_assets.llm.spantext import SpanReader, commit_floor
from kb_resources.git.repo import GitRepo
from kb_resources.store import reads


def unbacked_claims(
    repo: GitRepo, engine: Engine, program: Program, extractor_id: str
) -> tuple[int, list[str]]:
    """(units checked, one line per violation) for the units ``extractor_id`` staged at the commit."""
    with engine.connect() as conn:
        staged = set(reads.staged_artifact_ids(conn, program.sha, extractor_id))
        records = [r for r in reads.snapshot_records(conn, program.sha) if r.artifact_id in staged]
    reader, floor = SpanReader(repo, program), commit_floor(program)
    problems: list[str] = []
    for record in records:
        key = record.logical_key
        if record.method != "llm_grounded" or not 0.0 < record.confidence <= CONFIDENCE_CEILING:
            problems.append(f"{key}: method {record.method}, confidence {record.confidence}")
        if not record.prompt_version or not record.model_id:
            problems.append(f"{key}: no prompt_version or model_id")
        claims = record.payload.get("claims") or []
        if not claims:
            problems.append(f"{key}: stored without a surviving claim")
        spans = reader.texts(Grounding(g.span_id, g.path, g.role) for g in record.grounding)
        for claim in claims:
            outcome = floor.judge(Claim(str(claim.get("text", "")), tuple(claim.get("symbols") or ())), spans)
            if isinstance(outcome, str):
                problems.append(f"{key}: claim {str(claim.get('text'))[:60]!r} {outcome}")
    return len(records), problems
