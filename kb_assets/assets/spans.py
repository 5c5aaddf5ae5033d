"""``code_spans``: every definition, import and assignment of the commit, parsed once per blob."""

import dagster as dg

from kb_assets.assets.ingest import IndexConfig
from kb_assets.assets.launched import adopt_launched_run
from kb_assets.core.ids import NORMALIZATION_VERSION
from kb_assets.core.spans import LANG
from kb_assets.indexing.extract import start_ahead
from kb_assets.indexing.parse import parse_commit
from kb_assets.partitions import commits
from kb_resources.resources import KnowbaseResource


@dg.asset(
    partitions_def=commits,
    deps=["commit_tree"],
    group_name="ingest",
    code_version=f"{LANG}-n{NORMALIZATION_VERSION}",
    kinds={"python", "postgres"},
)
def code_spans(
    context: dg.AssetExecutionContext, config: IndexConfig, kb: KnowbaseResource
) -> dg.MaterializeResult[None]:
    """Spans (modules, classes, functions, imports, assignments) of the commit; new blobs only are parsed."""
    adopt_launched_run(context)
    sha, full = context.partition_key, config.full
    stats = parse_commit(kb.git(), kb.engine(), sha, limits=kb.limits(), workers=kb.workers, force=full)
    context.log.info(f"{stats.files} files: {stats.parsed} parsed, {stats.reused} reused; {stats.gaps} gaps")
    ahead = start_ahead(kb.git(), kb.engine(), sha, limits=kb.limits(), workers=kb.workers)
    return dg.MaterializeResult(
        metadata={
            "files": stats.files,
            "parsed": stats.parsed,
            "reused": stats.reused,
            "spans": stats.spans,
            "gaps": stats.gaps,
            **({"started_ahead": True} if ahead else {}),
        },
        data_version=dg.DataVersion(stats.digest),
    )
