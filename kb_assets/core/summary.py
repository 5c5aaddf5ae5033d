"""How an indexed commit is described to people: the CLI summary line and the Markdown summary."""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kb_assets.core.models import Gap


@dataclass(frozen=True, slots=True)
class IndexStats:
    """The counters a published snapshot carries (``commit_ref.stats``)."""

    sha: str
    mode: str
    base_sha: str | None
    files: int
    parsed: int
    reused: int
    spans: int
    artifacts: int
    gaps: int

    def as_json(self) -> dict[str, object]:
        """The stats as stored with the commit."""
        return {
            "mode": self.mode,
            "base_sha": self.base_sha,
            "files": self.files,
            "parsed": self.parsed,
            "reused": self.reused,
            "spans": self.spans,
            "artifacts": self.artifacts,
            "gaps": self.gaps,
        }


def summary_line(stats: IndexStats) -> str:
    """The contract's one-line summary of an index run."""
    return (
        f"indexed {stats.sha[:12]} ({stats.mode}): {stats.files} files ({stats.parsed} parsed, "
        f"{stats.reused} reused), {stats.spans} spans, {stats.artifacts} artifacts, {stats.gaps} gaps"
    )


def gap_line(gap: Gap) -> str:
    """One gap as a human-readable line: where, why, what.

    Paths and details come from the repository (git allows a newline or an escape sequence in a
    file name), so control and format characters are shown escaped: a gap is always one line and
    never drives the terminal.
    """
    where = f"{gap.path}:{gap.line}" if gap.line else gap.path
    return printable(f"gap {where}: {gap.reason} ({gap.source}) {gap.detail}".rstrip())


def printable(text: str) -> str:
    """``text`` with control, format and surrogate characters as ``\\xNN``/``\\uNNNN`` escapes."""
    if text.isprintable():
        return text
    return "".join(_escape(c) if unicodedata.category(c) in _UNPRINTABLE else c for c in text)


_UNPRINTABLE = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def markdown_summary(stats: IndexStats, counts: Mapping[str, int], gaps: Sequence[Gap]) -> str:
    """A short Markdown report for the Dagster UI: what the snapshot holds and what was not understood."""
    lines = [
        f"### Snapshot {stats.sha[:12]} ({stats.mode})",
        "",
        f"{stats.files} files ({stats.parsed} parsed, {stats.reused} reused), {stats.spans} spans, "
        f"{stats.artifacts} artifacts, {stats.gaps} gaps"
        + (f"; base {stats.base_sha[:12]}" if stats.base_sha else ""),
        "",
        "| kind | artifacts |",
        "| --- | ---: |",
    ]
    lines += [f"| `{kind}` | {n} |" for kind, n in sorted(counts.items())]
    if gaps:
        lines += ["", "| gap reason | files |", "| --- | ---: |"]
        by_reason = Counter(g.reason for g in gaps)
        lines += [f"| {reason} | {n} |" for reason, n in sorted(by_reason.items())]
    return "\n".join(lines)
