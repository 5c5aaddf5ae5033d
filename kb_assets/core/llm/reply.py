"""The one reply shape every model-backed pass asks for, and reading it back from a provider.

CONTRACT.md fixes it: ``{"summary": str, "claims": [{"text": str, "symbols": [str, ...]}]}``.
Adapters request it through tool use or structured output where the provider has one; a reply
that arrives as plain text is accepted when it holds that JSON object (bare, or in a ``json``
fence, or embedded in prose). Anything else is a ``ReplyError``: the target gets no artifact.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from kb_assets.core.errors import KbError
from kb_assets.core.models import JSON

REPLY_TOOL = "record_knowledge"
"""The tool (or JSON schema) name under which the reply is requested."""

REPLY_SCHEMA: dict[str, JSON] = {
    "type": "object",
    "properties": {
        "summary": {"type": "string", "description": "one paragraph"},
        "claims": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "text": {"type": "string", "description": "one checkable statement"},
                    "symbols": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "identifiers or dotted paths of the code the claim relies on",
                    },
                },
                "required": ["text", "symbols"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["summary", "claims"],
    "additionalProperties": False,
}

_FENCE = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)


class ReplyError(KbError):
    """A model's reply does not have the reply schema's shape (the target is skipped)."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"malformed model reply: {detail}")
        self.detail = detail


@dataclass(frozen=True, slots=True)
class Claim:
    """One statement as the model made it, with the symbols it says the statement relies on."""

    text: str
    symbols: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Reply:
    """A parsed reply: the summary paragraph and every claim offered (not yet validated)."""

    summary: str
    claims: tuple[Claim, ...]


def parse_reply(value: JSON) -> Reply:
    """Read a reply given as a decoded object (tool input) or as text holding the JSON object."""
    data = _decode(value) if isinstance(value, str) else value
    if not isinstance(data, Mapping):
        raise ReplyError(f"expected a JSON object, got {type(data).__name__}")
    summary = data.get("summary")
    claims = data.get("claims")
    if not isinstance(summary, str) or not summary.strip():
        raise ReplyError("'summary' must be a non-empty string")
    if not isinstance(claims, list):
        raise ReplyError("'claims' must be a list")
    return Reply(summary=summary.strip(), claims=tuple(_claim(c) for c in claims))


def _claim(value: JSON) -> Claim:
    """One claim; a claim with a wrong shape keeps its text (if any) and no symbols, so the floor
    drops it and counts it, instead of failing the whole reply."""
    if not isinstance(value, Mapping):
        return Claim(text=str(value), symbols=())
    text = value.get("text")
    symbols = value.get("symbols")
    names = tuple(s for s in symbols if isinstance(s, str)) if isinstance(symbols, list) else ()
    good = isinstance(symbols, list) and len(names) == len(symbols)
    return Claim(text=str(text or "").strip(), symbols=names if good else ())


def _decode(text: str) -> JSON:
    """The JSON object in a text reply: the whole text, a fenced block, or the outermost braces."""
    candidates = [text.strip()]
    candidates += _FENCE.findall(text)
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    raise ReplyError("no JSON object in the reply text")
