"""Model-backed units: identity, reuse and the artifact built from a validated reply.

Never re-bill: every unit records ``input_key``, a digest of everything that decides what the model
is asked (the pass's prompt version, the model id, the unit's logical key, the span ids it is
grounded on, and any extra identity such as a pull request's digest). Before calling a model the
pass looks for a stored unit with the same logical key, prompt version, model id and
``input_key``; when there is one, its payload is reused and nothing is sent.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Container, Iterable, Mapping, Sequence

from kb_assets.core.extractors.base import Draft
from kb_assets.core.grounding import check_grounding
from kb_assets.core.ids import artifact_id
from kb_assets.core.json_text import canonical_json
from kb_assets.core.llm.floor import CONFIDENCE_CEILING
from kb_assets.core.models import JSON, Artifact, Gap, Grounding, Method

DESCRIBE_ID = "describe"
MINE_ID = "mine"
MODEL_PASS_IDS = (DESCRIBE_ID, MINE_ID)
"""Extractor ids of the model-backed passes: their staged entries survive a re-publish of the
deterministic snapshot of the same commit."""


def input_key(
    *,
    logical_key: str,
    span_ids: Iterable[str],
    prompt_version: str,
    model_id: str,
    extra: Mapping[str, JSON] | None = None,
) -> str:
    """The digest that decides whether a stored unit answers this request (see module docstring)."""
    body = {
        "logical_key": logical_key,
        "spans": sorted(set(span_ids)),
        "prompt_version": prompt_version,
        "model_id": model_id,
        "extra": dict(extra or {}),
    }
    return hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()


NO_BACKED_CLAIM = "no_backed_claim"
"""Gap reason of a unit whose model reply had no claim the target's code backs (nothing stored)."""

_INPUT = re.compile(r"\(input ([0-9a-f]{64})\)$")


def unsupported_gap(source: str, logical_key: str, key: str, path: str, line: int | None) -> Gap:
    """The gap recording that the model was asked about ``logical_key`` (``input_key`` ``key``) and
    none of its claims survived: shown like any gap, and remembered so the same input is never sent
    (and billed) again."""
    detail = f"{logical_key}: no claim of the model's reply is backed by its code (input {key})"
    return Gap(path=path, reason=NO_BACKED_CLAIM, detail=detail, line=line, source=source)


def gap_input_key(detail: str) -> str | None:
    """The ``input_key`` an ``unsupported_gap`` detail names."""
    match = _INPUT.search(detail)
    return match.group(1) if match else None


def pick_prior(payloads: Sequence[Mapping[str, JSON]], key: str) -> Mapping[str, JSON] | None:
    """The stored payload answering ``key`` (the first, in the caller's deterministic order)."""
    return next((p for p in payloads if p.get("input_key") == key), None)


def payload_confidence(payload: Mapping[str, JSON]) -> float:
    """A stored payload's confidence: the ceiling times its kept / offered claims."""
    kept = len(payload.get("claims") or [])
    offered = int(payload.get("claims_offered") or 0)
    return round(CONFIDENCE_CEILING * kept / offered, 4) if offered else 0.0


def model_artifact(
    *,
    kind: str,
    logical_key: str,
    extractor_id: str,
    extractor_version: str,
    payload: Mapping[str, JSON],
    grounding: Sequence[Grounding],
    prompt_version: str,
    model_id: str,
    occurrences: Container[tuple[str, str]],
) -> Artifact:
    """The content-addressed ``llm_grounded`` artifact (grounding checked against the commit)."""
    draft = Draft(kind=kind, logical_key=logical_key, payload=payload, grounding=tuple(grounding))
    rows = check_grounding(draft, occurrences)
    return Artifact(
        artifact_id=artifact_id(
            logical_key=logical_key,
            extractor_id=extractor_id,
            extractor_version=extractor_version,
            grounding=rows,
            payload=payload,
            prompt_version=prompt_version,
            model_id=model_id,
        ),
        kind=kind,
        logical_key=logical_key,
        extractor_id=extractor_id,
        extractor_version=extractor_version,
        method=Method.LLM_GROUNDED,
        confidence=payload_confidence(payload),
        payload=payload,
        grounding=rows,
        prompt_version=prompt_version,
        model_id=model_id,
    )
