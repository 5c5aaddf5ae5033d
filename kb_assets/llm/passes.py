"""What the two model-backed passes share: asking the model in parallel, judging the replies, counting,
and adding the resulting units to the commit's published snapshot in one transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Engine

from kb_assets.core.errors import NotIndexedError
from kb_assets.core.llm.prompt import Prompt
from kb_assets.core.llm.reply import REPLY_SCHEMA, REPLY_TOOL, Reply, ReplyError, parse_reply
from kb_assets.core.llm.units import NO_BACKED_CLAIM, gap_input_key
from kb_assets.core.models import Artifact, Gap
from kb_resources.llm.base import Completion, LlmRequest, RequestFailedError
from kb_resources.llm.client import LlmClient, Usage
from kb_resources.store import reads, writes


@dataclass
class PassStats:
    """Counters of one pass (the CLI line and the asset metadata)."""

    sha: str
    model_id: str
    prompt_version: str
    considered: int = 0
    reused: int = 0
    stored: int = 0
    unsupported: int = 0
    """Replies with no surviving claim: nothing stored for them (recorded as gaps)."""
    known_unsupported: int = 0
    """Inputs that yielded no backed claim before: not sent again."""
    failed: int = 0
    """Requests refused or replies not in the reply schema."""
    dropped_claims: int = 0
    skipped: int = 0
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = None
    extra: dict[str, int] = field(default_factory=dict)
    barren: set[str] = field(default_factory=set)
    """Logical keys asked this run whose reply kept no claim."""

    def line(self, verb: str) -> str:
        """The one summary line of ``kb describe`` / ``kb mine``."""
        cost = f"${self.cost_usd:.4f}" if self.cost_usd is not None else "cost unknown"
        extra = "".join(f", {v} {k.replace('_', '-')}" for k, v in self.extra.items() if v)
        return (
            f"{verb} {self.sha[:12]} with {self.model_id}: {self.stored} stored ({self.reused} reused, "
            f"{self.usage.calls} calls, {self.unsupported} unsupported, "
            f"{self.known_unsupported} known unsupported, {self.failed} failed, "
            f"{self.skipped} skipped), {self.dropped_claims} claims dropped, "
            f"{self.usage.input_tokens}+{self.usage.output_tokens} tokens, {cost}{extra}"
        )

    def metadata(self) -> dict[str, Any]:
        """Everything as plain values (Dagster metadata; never a key, never prompt text)."""
        return {
            "model_id": self.model_id,
            "prompt_version": self.prompt_version,
            "considered": self.considered,
            "calls": self.usage.calls,
            "reused": self.reused,
            "stored": self.stored,
            "unsupported": self.unsupported,
            "known_unsupported": self.known_unsupported,
            "failed": self.failed,
            "dropped_claims": self.dropped_claims,
            "skipped": self.skipped,
            "retries": self.usage.retries,
            "input_tokens": self.usage.input_tokens,
            "output_tokens": self.usage.output_tokens,
            "estimated_cost_usd": self.cost_usd if self.cost_usd is not None else "unknown",
            **self.extra,
        }


Answer = Reply | None
"""A parsed reply, or None when the request failed or the reply was malformed."""


def ask_all(llm: LlmClient, prompts: Sequence[Prompt], stats: PassStats) -> list[Answer]:
    """Send every prompt (at most ``llm.concurrency`` at once); answers in prompt order."""

    def ask(prompt: Prompt) -> tuple[Completion | None, Answer]:
        request = LlmRequest(
            system=prompt.system, user=prompt.user, tool_name=REPLY_TOOL, schema=REPLY_SCHEMA
        )
        try:
            completion = llm.complete(request)
        except RequestFailedError:
            return None, None
        try:
            return completion, parse_reply(completion.value)
        except ReplyError:
            return completion, None

    if not prompts:
        return []
    with ThreadPoolExecutor(max_workers=llm.concurrency, thread_name_prefix="kb-llm") as pool:
        results = list(pool.map(ask, prompts))
    for completion, answer in results:
        if completion is not None:
            stats.usage.add(completion)
        stats.failed += answer is None
    stats.usage.failures = stats.failed
    return [answer for _, answer in results]


def publish_units(
    engine: Engine,
    sha: str,
    extractor_id: str,
    artifacts: Sequence[Artifact],
    *,
    gaps: Sequence[Gap],
    keep: Callable[[dict[str, str]], list[str]] | None = None,
) -> int:
    """Store ``artifacts``, stage them (plus the previously staged ids ``keep`` selects from the
    old logical key -> id map), add them to the published snapshot of ``sha`` and make ``gaps``
    the pass's gaps at ``sha``, atomically."""
    with engine.begin() as conn:
        kept = keep(reads.staged_keys(conn, sha, extractor_id)) if keep is not None else []
        writes.insert_artifacts(conn, artifacts)
        writes.replace_staged(conn, sha, extractor_id, [*kept, *(a.artifact_id for a in artifacts)])
        writes.replace_gaps(conn, sha, extractor_id, gaps)
        return writes.publish_entries(conn, sha, extractor_id)


def known_unsupported(engine: Engine, extractor_id: str) -> set[str]:
    """Input keys this pass already sent without getting a backed claim (never sent again)."""
    with engine.connect() as conn:
        details = reads.gap_details(conn, extractor_id, NO_BACKED_CLAIM)
    return {key for detail in details if (key := gap_input_key(detail)) is not None}


def require_published(engine: Engine, sha: str) -> None:
    """A model pass adds to a published snapshot; ``NotIndexedError`` when there is none."""
    with engine.connect() as conn:
        if sha not in reads.published_commits(conn):
            raise NotIndexedError(sha)


def pass_artifact_ids(conn: Connection, sha: str, extractor_id: str) -> list[str]:
    """What a pass currently contributes to the snapshot of ``sha`` (its data version)."""
    return reads.staged_artifact_ids(conn, sha, extractor_id)
