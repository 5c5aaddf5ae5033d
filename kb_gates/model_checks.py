"""``claims_backed``: the anti-hallucination floor as an asset check on each model-backed asset.

Runs with every ``describe_commit`` / ``mine_history`` run: each unit the pass contributes to the
commit's snapshot is ``llm_grounded`` with a confidence below 1.0, has a prompt version and a
model id, holds at least one claim, and every claim's symbols are backed by the unit's own
grounding spans (the same floor, re-run from what the store holds).
"""

import dagster as dg

from kb_assets.indexing.load import load_program
from kb_assets.llm.recheck import unbacked_claims
from kb_assets.partitions import commits
from kb_resources.resources import KnowbaseResource

MODEL_ASSETS = {"descriptions": "describe", "decisions": "mine"}


def _claims_backed(asset: str, extractor_id: str) -> dg.AssetChecksDefinition:
    @dg.asset_check(asset=asset, name="claims_backed", partitions_def=commits)
    def check(context: dg.AssetCheckExecutionContext, kb: KnowbaseResource) -> dg.AssetCheckResult:
        """Every stored claim is backed by the unit's own spans; no unit without a claim."""
        program = load_program(
            kb.git(), kb.engine(), context.partition_key, limits=kb.limits(), workers=kb.workers
        )
        checked, problems = unbacked_claims(kb.git(), kb.engine(), program, extractor_id)
        return dg.AssetCheckResult(
            passed=not problems,
            metadata={
                "evidence": "\n".join(problems[:20]) or "none",
                "units": checked,
                "violations": len(problems),
            },
        )

    return check


def model_checks() -> list[dg.AssetChecksDefinition]:
    """The floor check of each model-backed asset."""
    return [_claims_backed(asset, extractor_id) for asset, extractor_id in MODEL_ASSETS.items()]
