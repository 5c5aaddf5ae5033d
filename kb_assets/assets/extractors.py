"""One asset per registered deterministic extractor, generated from the registry.

Each asset's ``code_version`` is its extractor's version and its data version is the digest of
the artifact ids it produced, so the lineage graph shows exactly what an upgrade made stale.
"""

from pathlib import Path

import dagster as dg

from kb_assets.assets.launched import adopt_launched_run
from kb_assets.core.extractors.base import Extractor
from kb_assets.core.extractors.registry import EXTRACTORS, upstream_assets
from kb_assets.indexing.carries import carry_file
from kb_assets.indexing.extract import extract_commit
from kb_assets.indexing.load import load_program
from kb_assets.indexing.prefetch import step_tags
from kb_assets.partitions import commits
from kb_resources.resources import KnowbaseResource


def extractor_asset(extractor: Extractor) -> dg.AssetsDefinition:
    """The commit-partitioned asset that runs ``extractor`` and stages its artifacts."""

    @dg.asset(
        name=extractor.asset_name,
        partitions_def=commits,
        deps=["code_spans", *upstream_assets(extractor)],
        group_name="knowledge",
        code_version=extractor.version,
        description=extractor.description,
        kinds={"python"},
        metadata={"extractor_id": extractor.extractor_id, "artifact_kind": extractor.kind},
        op_tags=step_tags(extractor.extractor_id),
    )
    def _asset(context: dg.AssetExecutionContext, kb: KnowbaseResource) -> dg.MaterializeResult[None]:
        adopt_launched_run(context)
        program = load_program(
            kb.git(), kb.engine(), context.partition_key, limits=kb.limits(), workers=kb.workers
        )
        carry = carry_file(Path(kb.kb_home), kb.git().key())
        result = extract_commit(kb.engine(), program, extractor, carry_file=carry)
        return dg.MaterializeResult(
            metadata=result.metadata(), data_version=dg.DataVersion(result.data_version)
        )

    return _asset


extractor_assets: list[dg.AssetsDefinition] = [extractor_asset(ex) for ex in EXTRACTORS]
