"""Prompts as data: the instructions live in ``kb_assets/core/prompts/*.md``, the per-target text is
rendered here, and the prompt version is derived from both.

``prompt_version(name)`` is ``NAME-FORMAT-DIGEST``: ``FORMAT`` is bumped by hand when the rendering
code changes, ``DIGEST`` is the first 12 hex of sha256 over the instruction file, so editing a
prompt re-identifies (and re-bills) exactly the units it produced and nothing else.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources

from kb_assets.core.llm.floor import SpanText
from kb_assets.core.models import JSON

FORMAT = {"describe": "1", "mine": "1"}
"""Version of each pass's user-prompt rendering; bump on any change to what is sent."""

CODE_BUDGET_CHARS = 40_000
"""Code shown to the model per request (about 10k tokens); the rest is cut, saying how much."""

SPAN_MAX_LINES = 400


@dataclass(frozen=True, slots=True)
class Prompt:
    """What one request sends: the pass's instructions and the target's text."""

    system: str
    user: str

    @property
    def digest(self) -> str:
        """sha256 of the exact text sent (recorded, never the text itself)."""
        body = json.dumps([self.system, self.user], ensure_ascii=False)
        return hashlib.sha256(body.encode("utf-8")).hexdigest()


@functools.cache
def instructions(name: str) -> str:
    """The instruction text of pass ``name`` (``describe`` or ``mine``)."""
    return resources.files("kb_assets.core").joinpath("prompts", f"{name}.md").read_text("utf-8")


@functools.cache
def prompt_version(name: str) -> str:
    """``NAME-FORMAT-DIGEST``: identity-bearing in every unit the pass produces."""
    digest = hashlib.sha256(instructions(name).encode("utf-8")).hexdigest()[:12]
    return f"{name}-{FORMAT[name]}-{digest}"


def facts_block(facts: Mapping[str, JSON]) -> str:
    """Deterministic facts as sorted ``key: value`` lines (JSON values, compact)."""
    lines = []
    for key in sorted(facts):
        value = facts[key]
        shown = value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)
        lines.append(f"- {key}: {shown}")
    return "\n".join(lines)


def code_blocks(spans: Sequence[SpanText], roles: Mapping[str, str], budget: int = CODE_BUDGET_CHARS) -> str:
    """Fenced code of each span (focused spans first, whole modules last), within ``budget``."""
    ordered = sorted(spans, key=lambda s: (s.fq_symbol_path == "<module>", s.path, s.start_line, s.span_id))
    out: list[str] = []
    left = budget
    for span in ordered:
        head = f"### {span.path}:{span.start_line}-{span.end_line} ({roles.get(span.span_id, 'span')})"
        lines = span.text.splitlines()
        body = "\n".join(lines[:SPAN_MAX_LINES])
        if len(lines) > SPAN_MAX_LINES:
            body += f"\n# ... {len(lines) - SPAN_MAX_LINES} more lines not shown"
        if left <= 0:
            out.append(f"{head}\n(not shown: over the size budget)")
            continue
        if len(body) > left:
            body = body[:left].rsplit("\n", 1)[0] + "\n# ... cut: over the size budget"
        left -= len(body)
        out.append(f"{head}\n```python\n{body}\n```")
    return "\n\n".join(out)
