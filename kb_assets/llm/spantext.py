"""The code of grounding spans at one commit, read from git blobs, and the commit's claim floor.

Model-backed passes show a target's spans to the model and validate its claims against the same
text; both come from here, so what the model saw and what the floor checks are one thing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from kb_assets.core.llm.floor import Floor, SpanText
from kb_assets.core.models import Grounding, Span
from kb_assets.core.program import Program
from kb_assets.core.symbols.table import symbol_table
from kb_resources.git.repo import GitRepo


class SpanReader:
    """Span texts of one commit's program (each blob decoded once)."""

    def __init__(self, repo: GitRepo, program: Program) -> None:
        self.repo = repo
        self.program = program
        self._lines: dict[str, list[str]] = {}

    def lines(self, path: str) -> list[str]:
        """The lines of the file at ``path`` in this commit (undecodable bytes replaced)."""
        found = self._lines.get(path)
        if found is None:
            data = self.repo.read_blob(self.program.files[path].blob_id)
            found = data.decode("utf-8", "replace").splitlines()
            self._lines[path] = found
        return found

    def texts(self, grounding: Iterable[Grounding]) -> list[SpanText]:
        """One ``SpanText`` per distinct (span, path) of ``grounding``, in grounding order."""
        out: list[SpanText] = []
        seen: set[tuple[str, str]] = set()
        for g in grounding:
            if (g.span_id, g.path) in seen or g.path not in self.program.files:
                continue
            seen.add((g.span_id, g.path))
            source = self.program.files[g.path]
            span = next((s for s in source.spans if s.span_id == g.span_id), None)
            if span is not None:
                out.append(span_text(g.path, source.module, span, self.lines(g.path)))
        return out


def span_text(path: str, module: str | None, span: Span, lines: Sequence[str]) -> SpanText:
    """A span of a file with its code (lines ``start..end`` of the file)."""
    return SpanText(
        span_id=span.span_id,
        path=path,
        module=module,
        kind=span.kind,
        fq_symbol_path=span.fq_symbol_path,
        start_line=span.start_line,
        end_line=span.end_line,
        text="\n".join(lines[span.start_line - 1 : span.end_line]),
    )


def commit_floor(program: Program) -> Floor:
    """The claim floor of a commit: its files' spans and its symbol table as the resolver."""
    table = symbol_table(program)

    def resolve(module: str, chain: str) -> str | None:
        symbol = table.resolve(module, chain)
        return symbol.target if symbol is not None else None

    return Floor({path: source.spans for path, source in program.files.items()}, resolve)
