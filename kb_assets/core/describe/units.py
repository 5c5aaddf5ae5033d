"""``description`` units: the payload of a validated reply and the artifact it becomes.

Payload (CONTRACT.md plus bookkeeping): ``target``, ``target_kind``, ``summary``, ``claims``
(each ``{text, symbols, span_ids}``, only claims the floor kept), ``model_id``, ``prompt_version``,
``claims_offered`` (how many the model made; confidence is 0.8 x kept / offered) and
``input_key`` (what a later run compares to reuse it instead of calling the model). A route's
description also names its ``handler``, so readers that look units up by dotted path find it.
"""

from __future__ import annotations

from collections.abc import Container, Mapping

from kb_assets.core.describe.targets import Target
from kb_assets.core.llm.floor import Verdict
from kb_assets.core.llm.prompt import prompt_version
from kb_assets.core.llm.reply import Reply
from kb_assets.core.llm.units import DESCRIBE_ID, input_key, model_artifact
from kb_assets.core.models import JSON, Artifact

DESCRIBE_VERSION = "1"
DESCRIPTION_KIND = "description"


def describe_version() -> str:
    """The prompt version of the describe pass."""
    return prompt_version("describe")


def target_input_key(target: Target, model_id: str) -> str:
    """The reuse key of ``target`` for ``model_id`` (its span ids, prompt version, model)."""
    return input_key(
        logical_key=target.logical_key,
        span_ids=(g.span_id for g in target.grounding),
        prompt_version=describe_version(),
        model_id=model_id,
    )


def description_payload(target: Target, reply: Reply, verdict: Verdict, *, model_id: str) -> dict[str, JSON]:
    """The stored payload of a description whose claims ``verdict`` kept."""
    payload: dict[str, JSON] = {
        "target": target.target,
        "target_kind": target.kind,
        "summary": reply.summary,
        "claims": [c.as_json() for c in verdict.kept],
        "claims_offered": verdict.offered,
        "model_id": model_id,
        "prompt_version": describe_version(),
        "input_key": target_input_key(target, model_id),
    }
    handler = target.facts.get("handler") if target.kind == "route" else None
    if isinstance(handler, str):
        payload["handler"] = handler
    return payload


def description_artifact(
    target: Target, payload: Mapping[str, JSON], *, model_id: str, occurrences: Container[tuple[str, str]]
) -> Artifact:
    """The ``description`` artifact of ``target`` (grounded on the target's own spans)."""
    return model_artifact(
        kind=DESCRIPTION_KIND,
        logical_key=target.logical_key,
        extractor_id=DESCRIBE_ID,
        extractor_version=DESCRIBE_VERSION,
        payload=payload,
        grounding=target.grounding,
        prompt_version=describe_version(),
        model_id=model_id,
        occurrences=occurrences,
    )
