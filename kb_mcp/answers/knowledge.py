"""What ``get_knowledge`` and ``find_provenance`` answer: the units about a target or a line.

Both rank their candidates and fit the best of them to a token budget (``kb_mcp.ranking.fill``).
"""

from __future__ import annotations

from kb_mcp.context import ServeContext
from kb_mcp.errors import LineOutOfRangeError, UnknownFileError
from kb_mcp.models import KnowledgeAnswer, Omitted, ProvenanceAnswer, SpanRef
from kb_mcp.paths import normalize_path
from kb_mcp.ranking import Tier, fill, rank
from kb_mcp.targets import close_paths, resolve_target
from kb_mcp.units import load_units
from kb_resources.store import reads

MAX_LINE = 10_000_000
LINE_HINT = "raise token_budget to see every unit on these spans"
OMITTED_HINT = "raise token_budget, or ask about a narrower target (a class or function instead of a module)"


def knowledge_answer(serve: ServeContext, target: str, sha: str | None, budget: int) -> KnowledgeAnswer:
    """The units of the snapshot of ``sha`` about ``target``, best first, within ``budget`` tokens."""
    with serve.reading(sha) as (conn, commit, view):
        index = serve.index(conn, commit)
        resolution = resolve_target(index, target)
        ranked = rank(index, resolution.tiers)
        answer = KnowledgeAnswer(
            target=target,
            resolved_as=resolution.readings,
            sha=commit,
            matched=len(ranked),
            token_budget=budget,
            tokens_used=0,
            units=[],
            omitted=Omitted(),
        )
        answer.tokens_used = fill(
            answer, ranked, lambda b: load_units(conn, view, commit, b), budget, OMITTED_HINT
        )
    return answer


NO_UNITS = (
    "no knowledge unit is grounded on these spans; get_knowledge on the innermost span's symbol may help"
)


def provenance_answer(
    serve: ServeContext, file: str, line: int, sha: str | None, budget: int
) -> ProvenanceAnswer:
    """The spans covering ``file:line`` at ``sha`` (innermost first) and the units built on them."""
    with serve.reading(sha) as (conn, commit, view):
        path = normalize_path(file)
        found = reads.file_at(conn, commit, path)
        if found is None:
            raise UnknownFileError(path, commit, close_paths(path, serve.index(conn, commit).files))
        if line < 1 or line > MAX_LINE or (found.line_count is not None and line > found.line_count):
            raise LineOutOfRangeError(path, line, found.line_count or 0, commit)
        spans = reads.spans_covering(conn, commit, path, line)
        depth = {s.span_id: i for i, s in enumerate(spans)}
        index = serve.index(conn, commit)
        tiers: dict[str, int] = {}
        for unit in index.grounded.get(path, ()):
            if unit.span_id in depth:
                tier = Tier.OWN if depth[unit.span_id] == 0 else Tier.IN_SPAN
                tiers[unit.artifact_id] = min(tiers.get(unit.artifact_id, tier), tier)
        ranked = rank(index, tiers)
        answer = ProvenanceAnswer(
            file=path,
            line=line,
            sha=commit,
            spans=[
                SpanRef(**s._asdict(), provenance=f"{path}:{s.start_line}-{s.end_line}@{commit}")
                for s in spans
            ],
            units=[],
            omitted=Omitted(),
            message=None if ranked else NO_UNITS,
        )
        fill(answer, ranked, lambda b: load_units(conn, view, commit, b), budget, LINE_HINT)
    return answer
