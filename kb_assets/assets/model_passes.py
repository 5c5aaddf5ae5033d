"""``descriptions`` and ``decisions``: the model-backed assets (optional, key-gated, never on ``kb index``).

Both are partitioned by commit and downstream of ``knowledge_snapshot``; each runs in its own job
(``describe_commit``, ``mine_history``) so indexing never waits for, pays for or needs a model.
Their metadata is the pass's accounting: calls, reuse, tokens, estimated cost, what the floor
dropped, and (for decisions) why commits were skipped and how PR fetches went. Never a key and
never prompt text.
"""

import dagster as dg

from kb_assets.core.describe.units import DESCRIBE_VERSION, describe_version
from kb_assets.core.mine.decisions import MINE_VERSION, mine_version
from kb_assets.indexing.extract import ids_digest
from kb_assets.indexing.load import load_program
from kb_assets.llm.describe import describe_commit
from kb_assets.llm.mine import mine_history
from kb_assets.llm.passes import PassStats, pass_artifact_ids, require_published
from kb_assets.partitions import commits
from kb_resources.git.remote import remote_url
from kb_resources.github import pull_source
from kb_resources.llm.resource import LlmResource
from kb_resources.resources import KnowbaseResource


class DescribeConfig(dg.Config):
    """Which targets to describe this run."""

    kinds: list[str] = []  # noqa: RUF012 - a pydantic field: the default is copied per instance
    """Target kinds to send to the model (empty: all); stored descriptions are kept either way."""
    limit: int = -1
    """At most this many model calls (-1: no limit)."""
    force: bool = False
    """Ask the model again even where a stored description (or a no_backed_claim gap) answers."""


class MineConfig(dg.Config):
    """How much history to mine and how."""

    max_commits: int = 50
    force: bool = False
    """Ask the model again even where a stored decision answers."""
    prs: bool = False
    """Fetch the GitHub PR text of squash-merged commits as context (the only networked step)."""


def _result(
    context: dg.AssetExecutionContext, stats: PassStats, kb: KnowbaseResource, extractor_id: str, verb: str
) -> dg.MaterializeResult[None]:
    with kb.engine().connect() as conn:
        ids = pass_artifact_ids(conn, context.partition_key, extractor_id)
    line = stats.line(verb)
    context.log.info(line)
    return dg.MaterializeResult(
        metadata={**stats.metadata(), "summary_line": line}, data_version=dg.DataVersion(ids_digest(ids))
    )


@dg.asset(
    partitions_def=commits,
    deps=["knowledge_snapshot"],
    group_name="model_passes",
    code_version=f"{DESCRIBE_VERSION}:{describe_version()}",
    kinds={"python"},
    metadata={"artifact_kind": "description", "method": "llm_grounded"},
)
def descriptions(
    context: dg.AssetExecutionContext, config: DescribeConfig, kb: KnowbaseResource, llm: LlmResource
) -> dg.MaterializeResult[None]:
    """Summaries and claims for routes, entities, event handlers, process paths, modules, packages and
    the repository; every claim checked against the target's own spans, unbacked ones dropped."""
    sha = context.partition_key
    require_published(kb.engine(), sha)
    client = llm.open()
    program = load_program(kb.git(), kb.engine(), sha, limits=kb.limits(), workers=kb.workers)
    stats = describe_commit(
        kb.git(),
        kb.engine(),
        program,
        client,
        kinds=config.kinds or None,
        limit=None if config.limit < 0 else config.limit,
        force=config.force,
    )
    return _result(context, stats, kb, "describe", "described")


@dg.asset(
    partitions_def=commits,
    deps=["knowledge_snapshot"],
    group_name="model_passes",
    code_version=f"{MINE_VERSION}:{mine_version()}",
    kinds={"python"},
    metadata={"artifact_kind": "decision", "method": "llm_grounded"},
)
def decisions(
    context: dg.AssetExecutionContext, config: MineConfig, kb: KnowbaseResource, llm: LlmResource
) -> dg.MaterializeResult[None]:
    """One decision per mined commit of first-party history, grounded on the spans it changed."""
    sha = context.partition_key
    require_published(kb.engine(), sha)
    client = llm.open()
    program = load_program(kb.git(), kb.engine(), sha, limits=kb.limits(), workers=kb.workers)
    pulls = pull_source(llm.github_api_url, remote_url(kb.git())) if config.prs else None
    stats = mine_history(
        kb.git(),
        kb.engine(),
        program,
        client,
        max_commits=config.max_commits,
        force=config.force,
        pulls=pulls,
        limits=kb.limits(),
        workers=kb.workers,
    )
    return _result(context, stats, kb, "mine", "mined")
