"""``commit_tree``: the commit's Python files, their modules and the indexed base it builds on."""

import hashlib

import dagster as dg

from kb_assets.assets.launched import adopt_launched_run
from kb_assets.indexing.ingest import ingest_commit
from kb_assets.partitions import commits
from kb_resources.resources import KnowbaseResource


class IndexConfig(dg.Config):
    """How to index a commit: against an explicit base (``parent``) or from scratch (``full``)."""

    parent: str = ""
    full: bool = False


@dg.asset(partitions_def=commits, group_name="ingest", code_version="1", kinds={"git"})
def commit_tree(
    context: dg.AssetExecutionContext, config: IndexConfig, kb: KnowbaseResource
) -> dg.MaterializeResult[None]:
    """The commit's Python files, their module names, and the indexed ancestor it reuses."""
    adopt_launched_run(context)
    tree = ingest_commit(
        kb.git(), kb.engine(), context.partition_key, parent=config.parent or None, full=config.full
    )
    digest = hashlib.sha256("".join(f"{f.path}\0{f.blob_id}\0" for f in tree.files).encode()).hexdigest()
    return dg.MaterializeResult(
        metadata={
            "files": len(tree.files),
            "changed_files": tree.changed,
            "mode": tree.mode,
            "base_sha": tree.base_sha or "",
            "import_roots": ", ".join(r or "." for r in tree.module_map.roots),
            "modules": len(tree.module_map.paths),
        },
        data_version=dg.DataVersion(digest),
    )
