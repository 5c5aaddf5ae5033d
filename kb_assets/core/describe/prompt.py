"""The text sent to the model for one describe target.

Three sections: the deterministic facts, the summaries of members described before (packages and
the repository only; context, never evidence), and the target's own code. A package shows its
``__init__`` and its members' outlines (their module spans are grounding, but whole files would not
fit); the repository shows its top-level surface; every other target shows all its spans.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kb_assets.core.describe.targets import Target
from kb_assets.core.llm.floor import SpanText
from kb_assets.core.llm.prompt import Prompt, code_blocks, facts_block, instructions

MAX_SUMMARY_CHARS = 600


def shown_spans(target: Target, spans: Sequence[SpanText]) -> list[SpanText]:
    """The spans whose code is shown (a package's members are shown as outlines instead)."""
    if target.kind != "package":
        return list(spans)
    own = {g.span_id for g in target.grounding if g.role == "package"}
    return [s for s in spans if s.span_id in own]


def roles_of(target: Target) -> dict[str, str]:
    """span_id -> its grounding role(s), for the code headings."""
    roles: dict[str, set[str]] = {}
    for g in target.grounding:
        roles.setdefault(g.span_id, set()).add(g.role)
    return {sid: ",".join(sorted(r)) for sid, r in roles.items()}


def describe_prompt(target: Target, spans: Sequence[SpanText], summaries: Mapping[str, str]) -> Prompt:
    """The prompt for ``target`` given its grounding spans' code and the summaries known so far."""
    parts = [
        f"Target: {target.kind} {target.target}",
        "",
        "## Facts (derived deterministically from the code)",
    ]
    parts.append(facts_block(target.facts))
    members = [(m, summaries[m]) for m in target.members if m in summaries]
    if members:
        parts += ["", "## Member summaries (context written earlier by a model; not evidence)"]
        parts += [f"- {name}: {_clip(text)}" for name, text in members]
    parts += [
        "",
        "## Code (the target's own spans)",
        code_blocks(shown_spans(target, spans), roles_of(target)),
    ]
    return Prompt(system=instructions("describe"), user="\n".join(parts))


def _clip(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_SUMMARY_CHARS else flat[: MAX_SUMMARY_CHARS - 3] + "..."
