"""The ``decisions`` pass: one decision per commit of first-party history, grounded on what it changed.

From the snapshot's commit S, the first-parent chain is walked back (at most ``max_commits``).
Merges are skipped; a commit that changed no `.py` file ("docs only") or no span never reaches the
model; a commit none of whose changed spans still occurs at S cannot be grounded in S's snapshot
("superseded") and is skipped before any call. A decision already stored for the same commit,
changed spans, prompt version, model and PR digest is reused (re-judged against the spans still
present) unless ``force``; a commit whose reply kept no claim is recorded as a ``no_backed_claim``
gap and, unless ``force``, never sent again. With ``pulls``, the PR text of a squash-merged commit
is fetched as context; a failed fetch mines the commit without it and is counted. Decisions of
commits not walked this time stay in S's snapshot.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from sqlalchemy import Engine

from kb_assets.core.grounding import known_occurrences
from kb_assets.core.llm.floor import Floor, SpanText
from kb_assets.core.llm.prompt import Prompt
from kb_assets.core.llm.units import MINE_ID, pick_prior, unsupported_gap
from kb_assets.core.mine.decisions import (
    CHANGED_ROLE,
    DECISION_KIND,
    PullText,
    changed_names,
    decision_artifact,
    decision_input_key,
    decision_key,
    decision_payload,
    mine_prompt,
    mine_version,
    revalidated,
    squash_pr_number,
)
from kb_assets.core.models import JSON, Artifact, Gap, Grounding
from kb_assets.core.program import Program
from kb_assets.core.spans import ParseLimits
from kb_assets.llm.history import CommitChange, commit_change
from kb_assets.llm.passes import PassStats, ask_all, known_unsupported, publish_units
from kb_assets.llm.spantext import SpanReader, commit_floor
from kb_resources.git.repo import GitRepo
from kb_resources.github import PullFetchError, PullSource
from kb_resources.llm.client import LlmClient
from kb_resources.store import reads

COUNTERS = ("commits", "merges", "docs_only", "no_code_change", "superseded", "pr_fetched", "pr_failed")


@dataclass(frozen=True, slots=True)
class Pending:
    """A commit ready to be mined: its change, grounding at S, PR text and reuse key."""

    change: CommitChange
    grounding: tuple[Grounding, ...]
    spans: tuple[SpanText, ...]
    pull: PullText | None
    key: str


def mine_history(
    repo: GitRepo,
    engine: Engine,
    program: Program,
    llm: LlmClient,
    *,
    max_commits: int,
    force: bool = False,
    pulls: PullSource | None = None,
    limits: ParseLimits,
    workers: int,
) -> PassStats:
    """Mine the history behind ``program``'s commit and add the decisions to its snapshot."""
    stats = PassStats(sha=program.sha, model_id=llm.model_id, prompt_version=mine_version())
    stats.extra = dict.fromkeys(COUNTERS, 0)
    walk = _Walk(
        repo,
        engine=engine,
        program=program,
        model_id=llm.model_id,
        pulls=pulls,
        stats=stats,
        limits=limits,
        workers=workers,
    )
    pending = [
        p
        for sha in repo.first_parent_chain(program.sha, limit=max(max_commits, 0))
        if (p := walk.prepare(sha))
    ]
    stats.considered = len(pending)
    prior = {} if force else _prior(engine, pending, llm.model_id)
    known = set() if force else known_unsupported(engine, MINE_ID)
    payloads: dict[str, dict[str, JSON]] = {}
    to_ask: list[Pending] = []
    barren: list[Pending] = []
    for item in pending:
        stored = pick_prior(prior.get(decision_key(item.change.sha), []), item.key)
        if stored is None and item.key in known:
            stats.known_unsupported += 1
            barren.append(item)
            continue
        if stored is None:
            to_ask.append(item)
            continue
        stats.reused += 1
        payloads[item.change.sha] = revalidated(stored, walk.floor, item.spans)
    payloads.update(_ask(to_ask, walk.floor, llm, stats))
    artifacts, unsupported = _artifacts(pending, payloads, program, llm.model_id, stats)
    stats.stored = len(artifacts)
    stats.cost_usd = stats.usage.cost(llm.price)
    if pulls is not None:
        stats.extra.update(pr_fetched=pulls.fetched, pr_failed=pulls.failed)
    walked = {decision_key(p.change.sha) for p in pending}
    gaps = _kept_gaps(engine, program.sha, walked) + [_gap(item) for item in [*barren, *unsupported]]
    publish_units(  # decisions (and gaps) of commits not walked this time stay; walked ones are replaced
        engine,
        program.sha,
        MINE_ID,
        artifacts,
        gaps=sorted(gaps, key=lambda g: (g.detail, g.path)),
        keep=lambda old: [a for k, a in old.items() if k not in walked],
    )
    return stats


def _gap(item: Pending) -> Gap:
    """The ``no_backed_claim`` gap of a commit whose decision kept no claim."""
    first = item.spans[0] if item.spans else None
    path = first.path if first is not None else item.grounding[0].path
    return unsupported_gap(
        MINE_ID, decision_key(item.change.sha), item.key, path, first.start_line if first else None
    )


def _kept_gaps(engine: Engine, sha: str, walked: set[str]) -> list[Gap]:
    """The pass's gaps at ``sha`` about commits not walked this time (they stay recorded)."""
    with engine.connect() as conn:
        found = reads.gaps(conn, sha)
    return [g for g in found if g.source == MINE_ID and g.detail.split(": ", 1)[0] not in walked]


class _Walk:
    """Turns commits of the walk into ``Pending`` items (or counts why not)."""

    def __init__(
        self,
        repo: GitRepo,
        *,
        engine: Engine,
        program: Program,
        model_id: str,
        pulls: PullSource | None,
        stats: PassStats,
        limits: ParseLimits,
        workers: int,
    ) -> None:
        self.repo, self.engine, self.program, self.model_id = repo, engine, program, model_id
        self.pulls, self.stats, self.limits, self.workers = pulls, stats, limits, workers
        self.reader, self.floor = SpanReader(repo, program), commit_floor(program)
        self.where = span_paths(program)

    def prepare(self, sha: str) -> Pending | None:
        """The commit ready to mine, or None (counted) when it is a merge, docs-only or ungroundable."""
        counts = self.stats.extra
        counts["commits"] += 1
        parents = self.repo.commit_info(sha).parents
        if len(parents) > 1:
            counts["merges"] += 1
            return None
        parent = parents[0] if parents else None
        change = commit_change(self.repo, self.engine, sha, parent, limits=self.limits, workers=self.workers)
        if not change.py_changed or not change.changed:
            counts["docs_only" if not change.py_changed else "no_code_change"] += 1
            return None
        grounding = grounding_at(self.where, change)
        if not grounding:
            counts["superseded"] += 1
            return None
        pull = _pull(self.pulls, change.message)
        key = decision_input_key(sha, change.changed, self.model_id, pull)
        return Pending(change, grounding, tuple(self.reader.texts(grounding)), pull, key)


def span_paths(program: Program) -> dict[str, list[str]]:
    """span_id -> the paths where it occurs in ``program``'s commit, sorted."""
    where: dict[str, list[str]] = defaultdict(list)
    for path in sorted(program.files):
        for span in program.files[path].spans:
            if not where[span.span_id] or where[span.span_id][-1] != path:
                where[span.span_id].append(path)
    return where


def grounding_at(where: dict[str, list[str]], change: CommitChange) -> tuple[Grounding, ...]:
    """The changed spans that occur at the snapshot's commit (same path first, else where they
    moved), role ``changed``."""
    rows = set()
    for c in change.changed:
        paths = where.get(c.span.span_id, [])
        if paths:
            rows.add(Grounding(c.span.span_id, c.path if c.path in paths else paths[0], CHANGED_ROLE))
    return tuple(sorted(rows))


def _pull(pulls: PullSource | None, message: str) -> PullText | None:
    number = squash_pr_number(message) if pulls is not None else None
    if pulls is None or number is None:
        return None
    try:
        return pulls.fetch(number)
    except PullFetchError:
        return None


def _prior(engine: Engine, pending: list[Pending], model_id: str) -> dict[str, list[dict[str, JSON]]]:
    keys = [decision_key(p.change.sha) for p in pending]
    with engine.connect() as conn:
        return reads.prior_payloads(conn, DECISION_KIND, keys, mine_version(), model_id)


def _ask(items: list[Pending], floor: Floor, llm: LlmClient, stats: PassStats) -> dict[str, dict[str, JSON]]:
    """Ask the model about each commit and keep the replies the floor supports."""
    prompts: list[Prompt] = [
        mine_prompt(
            p.change.sha,
            parent=p.change.parent,
            message=p.change.message,
            shown=p.change.shown,
            diff=p.change.diff,
            pull=p.pull,
        )
        for p in items
    ]
    fresh: dict[str, dict[str, JSON]] = {}
    for item, reply in zip(items, ask_all(llm, prompts, stats), strict=True):
        if reply is None:
            continue
        verdict = floor.validate(reply, item.spans)
        stats.dropped_claims += len(verdict.dropped)
        change = item.change
        fresh[change.sha] = decision_payload(
            sha=change.sha,
            parent=change.parent,
            message=change.message,
            reply=reply,
            verdict=verdict,
            changed=changed_names(change.changed, change.modules),
            pull=item.pull,
            model_id=llm.model_id,
            key=item.key,
        )
    return fresh


def _artifacts(
    pending: list[Pending],
    payloads: dict[str, dict[str, JSON]],
    program: Program,
    model_id: str,
    stats: PassStats,
) -> tuple[list[Artifact], list[Pending]]:
    """The decisions with at least one surviving claim, and the commits whose reply kept none
    (counted as unsupported: nothing is stored for them)."""
    occurrences = known_occurrences(program)
    artifacts: list[Artifact] = []
    unsupported: list[Pending] = []
    for item in pending:
        payload = payloads.get(item.change.sha)
        if payload is None:
            continue
        if not payload["claims"]:
            stats.unsupported += 1
            unsupported.append(item)
            continue
        artifacts.append(
            decision_artifact(
                item.change.sha, payload, item.grounding, model_id=model_id, occurrences=occurrences
            )
        )
    return artifacts, unsupported
