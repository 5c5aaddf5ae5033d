"""``knowledge_snapshot``: the commit's published manifest, visible atomically."""

import dagster as dg

from kb_assets.assets.launched import adopt_launched_run
from kb_assets.assets.metadata import latest_metadata
from kb_assets.assets.proof import require_proven
from kb_assets.core.extractors.registry import EXTRACTORS
from kb_assets.core.summary import markdown_summary, summary_line
from kb_assets.indexing.publish import publish_commit
from kb_assets.partitions import commits
from kb_resources.resources import KnowbaseResource


@dg.asset(
    partitions_def=commits,
    deps=[ex.asset_name for ex in EXTRACTORS],
    group_name="knowledge",
    code_version="1",
    kinds={"postgres"},
)
def knowledge_snapshot(context: dg.AssetExecutionContext, kb: KnowbaseResource) -> dg.MaterializeResult[None]:
    """The published knowledge of the commit: every extractor's artifacts, made visible in one transaction."""
    adopt_launched_run(context)
    require_proven(context)
    tree = latest_metadata(context, "commit_tree")
    spans = latest_metadata(context, "code_spans")
    stats, counts, gaps, digest = publish_commit(
        kb.engine(),
        context.partition_key,
        mode=str(tree.get("mode", "full")),
        base_sha=str(tree.get("base_sha") or "") or None,
        files=int(spans.get("files", 0)),
        parsed=int(spans.get("parsed", 0)),
        reused=int(spans.get("reused", 0)),
    )
    context.log.info(summary_line(stats))
    return dg.MaterializeResult(
        metadata={
            "summary": dg.MetadataValue.md(markdown_summary(stats, counts, gaps)),
            "summary_line": summary_line(stats),
            "mode": stats.mode,
            "base_sha": stats.base_sha or "",
            "files": stats.files,
            "parsed": stats.parsed,
            "reused": stats.reused,
            "spans": stats.spans,
            "artifacts": stats.artifacts,
            "gaps": stats.gaps,
            "counts": dict(counts),
        },
        data_version=dg.DataVersion(digest),
    )
