"""The ``descriptions`` pass: summaries and claims for every target of an indexed commit.

Every target is considered on every run. A target whose grounding (span ids), prompt version and
model are those of a stored description reuses it — no call, ever. Of the rest, those of the
requested kinds are sent to the model (at most ``limit`` calls), stage by stage so a package's
prompt can use its members' fresh summaries; each reply goes through the claim floor and becomes a
``description`` only if a claim survives. A reply with no surviving claim becomes a
``no_backed_claim`` gap instead, and its input is never sent again. The commit's published
snapshot then holds every reused or new description of the commit, nothing else of it changed.
"""

from __future__ import annotations

from collections.abc import Collection
from itertools import groupby

from sqlalchemy import Engine

from kb_assets.core.describe.prompt import describe_prompt
from kb_assets.core.describe.targets import UNIT_KINDS, Target, Unit, build_targets
from kb_assets.core.describe.units import (
    DESCRIPTION_KIND,
    describe_version,
    description_artifact,
    description_payload,
    target_input_key,
)
from kb_assets.core.grounding import known_occurrences
from kb_assets.core.llm.floor import Floor
from kb_assets.core.llm.units import DESCRIBE_ID, pick_prior, unsupported_gap
from kb_assets.core.models import JSON, Grounding
from kb_assets.core.program import Program
from kb_assets.llm.passes import PassStats, ask_all, known_unsupported, publish_units
from kb_assets.llm.spantext import SpanReader, commit_floor
from kb_resources.git.repo import GitRepo
from kb_resources.llm.client import LlmClient
from kb_resources.store import reads

CONTEXT_KINDS = (*UNIT_KINDS, "import_edge", "public_symbol")


def load_units(engine: Engine, sha: str) -> list[Unit]:
    """The snapshot's deterministic units a describe run reads (targets and their context)."""
    with engine.connect() as conn:
        records = reads.snapshot_records(conn, sha, list(CONTEXT_KINDS))
    return [
        Unit(
            r.kind, r.logical_key, r.payload, tuple(Grounding(g.span_id, g.path, g.role) for g in r.grounding)
        )
        for r in records
    ]


def describe_commit(
    repo: GitRepo,
    engine: Engine,
    program: Program,
    llm: LlmClient,
    *,
    kinds: Collection[str] | None = None,
    limit: int | None = None,
    force: bool = False,
) -> PassStats:
    """Describe the commit's targets (see the module docstring) and publish the descriptions;
    ``force`` asks the model again even where a stored description or gap answers."""
    stats = PassStats(sha=program.sha, model_id=llm.model_id, prompt_version=describe_version())
    targets = build_targets(program, load_units(engine, program.sha))
    stats.considered = len(targets)
    payloads = {} if force else _reusable(engine, targets, llm.model_id)
    stats.reused = len(payloads)
    known = set() if force else known_unsupported(engine, DESCRIBE_ID)
    open_targets = [t for t in targets if t.logical_key not in payloads]
    unsupported = [t for t in open_targets if target_input_key(t, llm.model_id) in known]
    stats.known_unsupported = len(unsupported)
    wanted = [t for t in open_targets if t not in unsupported and (kinds is None or t.kind in kinds)]
    todo = wanted if limit is None else wanted[: max(limit, 0)]
    stats.skipped = len(open_targets) - len(unsupported) - len(todo)
    reader, floor = SpanReader(repo, program), commit_floor(program)
    summaries = {
        t.target: str(payloads[t.logical_key]["summary"]) for t in targets if t.logical_key in payloads
    }
    for _, stage in groupby(todo, key=lambda t: t.stage):
        batch = list(stage)
        fresh = _describe_stage(batch, reader=reader, floor=floor, llm=llm, summaries=summaries, stats=stats)
        payloads.update(fresh)
        unsupported += [t for t in batch if t.logical_key in stats.barren]
        summaries.update(
            {t.target: str(fresh[t.logical_key]["summary"]) for t in batch if t.logical_key in fresh}
        )
    occurrences = known_occurrences(program)
    artifacts = [
        description_artifact(t, payloads[t.logical_key], model_id=llm.model_id, occurrences=occurrences)
        for t in targets
        if t.logical_key in payloads
    ]
    stats.stored = len(artifacts)
    stats.cost_usd = stats.usage.cost(llm.price)
    gaps = [
        unsupported_gap(DESCRIBE_ID, t.logical_key, target_input_key(t, llm.model_id), *_where(reader, t))
        for t in sorted(unsupported, key=lambda t: t.logical_key)
    ]
    publish_units(engine, program.sha, DESCRIBE_ID, artifacts, gaps=gaps)
    return stats


def _where(reader: SpanReader, target: Target) -> tuple[str, int | None]:
    """Path and first line of a target's first grounding span (where its gap is shown)."""
    spans = reader.texts(target.grounding[:1])
    if spans:
        return spans[0].path, spans[0].start_line
    return target.grounding[0].path, None


def _reusable(engine: Engine, targets: list[Target], model_id: str) -> dict[str, dict[str, JSON]]:
    """Logical key -> stored payload, for each target a stored description already answers."""
    with engine.connect() as conn:
        prior = reads.prior_payloads(
            conn, DESCRIPTION_KIND, [t.logical_key for t in targets], describe_version(), model_id
        )
    found: dict[str, dict[str, JSON]] = {}
    for target in targets:
        payload = pick_prior(prior.get(target.logical_key, []), target_input_key(target, model_id))
        if payload is not None:
            found[target.logical_key] = dict(payload)
    return found


def _describe_stage(
    batch: list[Target],
    *,
    reader: SpanReader,
    floor: Floor,
    llm: LlmClient,
    summaries: dict[str, str],
    stats: PassStats,
) -> dict[str, dict[str, JSON]]:
    """Ask the model about one stage's targets and keep the replies the floor supports."""
    texts = [reader.texts(t.grounding) for t in batch]
    prompts = [describe_prompt(t, spans, summaries) for t, spans in zip(batch, texts, strict=True)]
    answers = ask_all(llm, prompts, stats)
    fresh: dict[str, dict[str, JSON]] = {}
    for target, spans, reply in zip(batch, texts, answers, strict=True):
        if reply is None:
            continue
        verdict = floor.validate(reply, spans)
        stats.dropped_claims += len(verdict.dropped)
        if not verdict.kept:
            stats.unsupported += 1
            stats.barren.add(target.logical_key)
            continue
        fresh[target.logical_key] = description_payload(target, reply, verdict, model_id=llm.model_id)
    return fresh
