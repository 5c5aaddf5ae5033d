"""What one commit changed, in spans: the ground a ``decision`` stands on.

A commit's *changed spans* are the spans of its changed `.py` files whose ids its first parent's
versions of the changed files (renames included) do not have: added or modified definitions,
imports and assignments. A module span (the whole file) counts only when nothing finer changed in
that file, so a decision is grounded on what changed, not on every file it touched. Comment,
docstring and formatting edits change no span id, so they change nothing here either.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kb_assets.core.models import Span
from kb_assets.core.spans import MODULE_PATH

DIFF_BUDGET_CHARS = 20_000
DIFF_CONTEXT = 2


@dataclass(frozen=True, slots=True)
class ChangedSpan:
    """A span the commit added or modified, at its path in the commit."""

    path: str
    span: Span


def changed_paths(new: Mapping[str, str], old: Mapping[str, str]) -> list[str]:
    """`.py` paths whose blob differs between two trees (path -> blob id), added and removed too."""
    return sorted(p for p in set(new) | set(old) if new.get(p) != old.get(p))


def changed_spans(new: Mapping[str, Sequence[Span]], old: Mapping[str, Sequence[Span]]) -> list[ChangedSpan]:
    """The changed spans of the commit's changed files ``new`` against the parent's ``old``."""
    before = {s.span_id for spans in old.values() for s in spans}
    found: list[ChangedSpan] = []
    for path in sorted(new):
        fresh = [s for s in new[path] if s.span_id not in before]
        finer = [s for s in fresh if s.fq_symbol_path != MODULE_PATH]
        found.extend(ChangedSpan(path, s) for s in (finer or fresh))
    return found


def innermost(changed: Sequence[ChangedSpan]) -> list[ChangedSpan]:
    """The changed spans that contain no other changed span of the same file (shown to the model)."""

    def contains(outer: ChangedSpan, inner: ChangedSpan) -> bool:
        return (
            outer is not inner
            and outer.path == inner.path
            and outer.span.start_line <= inner.span.start_line
            and inner.span.end_line <= outer.span.end_line
            and (outer.span.start_line, outer.span.end_line) != (inner.span.start_line, inner.span.end_line)
        )

    return [c for c in changed if not any(contains(c, other) for other in changed)]


def unified_diff(
    new_text: Mapping[str, str], old_text: Mapping[str, str], budget: int = DIFF_BUDGET_CHARS
) -> str:
    """A unified diff of the changed files (``a/``/``b/`` paths), cut at ``budget`` characters."""
    chunks: list[str] = []
    for path in sorted(set(new_text) | set(old_text)):
        lines = difflib.unified_diff(
            old_text.get(path, "").splitlines(),
            new_text.get(path, "").splitlines(),
            fromfile=f"a/{path}" if path in old_text else "/dev/null",
            tofile=f"b/{path}" if path in new_text else "/dev/null",
            n=DIFF_CONTEXT,
            lineterm="",
        )
        chunks.append("\n".join(lines))
    text = "\n".join(c for c in chunks if c)
    return text if len(text) <= budget else text[:budget].rsplit("\n", 1)[0] + "\n... (diff cut)"
