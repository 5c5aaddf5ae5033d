"""``decision`` units: one per mined commit, grounded on the spans it changed (role ``changed``).

Payload: ``commit``, ``parent``, ``message`` (verbatim — a fact, not a model's words),
``decision`` (the model's one-paragraph account), ``claims`` (only those the floor keeps against
the changed spans), ``claims_offered``, ``changed`` (dotted paths of the changed spans, at most
``MAX_CHANGED``), ``model_id``, ``prompt_version``, ``input_key`` and, with ``--prs``, ``pr``
(``number``, ``title`` and ``digest`` of the pull request's text: context for the model, never
grounding; its digest is part of the unit's identity).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass

from kb_assets.core.json_text import canonical_json
from kb_assets.core.llm.floor import Floor, SpanText, Verdict, span_dotted
from kb_assets.core.llm.prompt import Prompt, code_blocks, instructions, prompt_version
from kb_assets.core.llm.reply import Claim, Reply
from kb_assets.core.llm.units import MINE_ID, input_key, model_artifact
from kb_assets.core.mine.changes import ChangedSpan
from kb_assets.core.models import JSON, Artifact, Grounding

MINE_VERSION = "1"
DECISION_KIND = "decision"
CHANGED_ROLE = "changed"
MAX_CHANGED = 50
MAX_PR_BODY_CHARS = 4_000

_SQUASH = re.compile(r"\(#(\d+)\)\s*$")


@dataclass(frozen=True, slots=True)
class PullText:
    """A pull request's title and body, as fetched (context for the model only)."""

    number: int
    title: str
    body: str

    @property
    def digest(self) -> str:
        """sha256 of the title and body: identity-bearing in the decision."""
        return hashlib.sha256(canonical_json([self.title, self.body]).encode("utf-8")).hexdigest()


def squash_pr_number(message: str) -> int | None:
    """The PR number of a squash-merged commit (its first line ends with ``(#123)``)."""
    lines = message.strip().splitlines()
    match = _SQUASH.search(lines[0]) if lines else None
    return int(match.group(1)) if match else None


def mine_version() -> str:
    """The prompt version of the mine pass."""
    return prompt_version("mine")


def decision_key(sha: str) -> str:
    """``decision:COMMIT_SHA`` (CONTRACT.md)."""
    return f"decision:{sha}"


def decision_input_key(sha: str, changed: Sequence[ChangedSpan], model_id: str, pull: PullText | None) -> str:
    """The reuse key: the commit, every span it changed, prompt version, model and PR digest."""
    return input_key(
        logical_key=decision_key(sha),
        span_ids=(c.span.span_id for c in changed),
        prompt_version=mine_version(),
        model_id=model_id,
        extra={"pr": pull.digest if pull is not None else None},
    )


def changed_names(changed: Sequence[ChangedSpan], modules: Mapping[str, str]) -> list[str]:
    """Dotted paths of the changed spans (import spans by their statement), sorted, bounded."""
    names = set()
    for c in changed:
        dotted = span_dotted(modules.get(c.path), c.span.fq_symbol_path)
        names.add(dotted or f"{modules.get(c.path) or c.path}:{c.span.fq_symbol_path}")
    return sorted(names)[:MAX_CHANGED]


def mine_prompt(
    sha: str, *, parent: str | None, message: str, shown: Sequence[SpanText], diff: str, pull: PullText | None
) -> Prompt:
    """The prompt for one commit: message, PR text (context), changed code, diff."""
    parts = [f"Commit: {sha}", f"Parent: {parent or '(none: the first commit)'}", "", "## Message (verbatim)"]
    parts.append(message.strip())
    if pull is not None:
        body = pull.body if len(pull.body) <= MAX_PR_BODY_CHARS else pull.body[:MAX_PR_BODY_CHARS] + " ..."
        parts += ["", f"## Pull request #{pull.number} (context; not evidence)", f"Title: {pull.title}", body]
    roles = {s.span_id: CHANGED_ROLE for s in shown}
    parts += ["", "## Changed code (as after the commit)", code_blocks(shown, roles)]
    parts += ["", "## Diff", f"```diff\n{diff}\n```"]
    return Prompt(system=instructions("mine"), user="\n".join(parts))


def decision_payload(
    *,
    sha: str,
    parent: str | None,
    message: str,
    reply: Reply,
    verdict: Verdict,
    changed: list[str],
    pull: PullText | None,
    model_id: str,
    key: str,
) -> dict[str, JSON]:
    """The stored payload of a decision whose claims ``verdict`` kept."""
    payload: dict[str, JSON] = {
        "commit": sha,
        "parent": parent,
        "message": message,
        "decision": reply.summary,
        "claims": [c.as_json() for c in verdict.kept],
        "claims_offered": verdict.offered,
        "changed": changed,
        "model_id": model_id,
        "prompt_version": mine_version(),
        "input_key": key,
    }
    if pull is not None:
        payload["pr"] = {"number": pull.number, "title": pull.title, "digest": pull.digest}
    return payload


def revalidated(payload: Mapping[str, JSON], floor: Floor, spans: Sequence[SpanText]) -> dict[str, JSON]:
    """A stored decision re-judged against the changed spans that still occur here: claims only
    ever drop out (a span the commit changed may have been changed again since)."""
    claims = tuple(Claim(str(c["text"]), tuple(c["symbols"])) for c in payload.get("claims") or [])
    verdict = floor.validate(Reply(summary=str(payload.get("decision") or ""), claims=claims), spans)
    return {**payload, "claims": [c.as_json() for c in verdict.kept]}


def decision_artifact(
    sha: str,
    payload: Mapping[str, JSON],
    grounding: Sequence[Grounding],
    *,
    model_id: str,
    occurrences: Container[tuple[str, str]],
) -> Artifact:
    """The ``decision`` artifact of commit ``sha``."""
    return model_artifact(
        kind=DECISION_KIND,
        logical_key=decision_key(sha),
        extractor_id=MINE_ID,
        extractor_version=MINE_VERSION,
        payload=payload,
        grounding=grounding,
        prompt_version=mine_version(),
        model_id=model_id,
        occurrences=occurrences,
    )
