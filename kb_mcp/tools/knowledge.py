"""``get_knowledge`` and ``find_provenance``: what is known about a symbol, a file or a line.

Declarations only (arguments, descriptions for the model, output models); the answers are
computed by ``kb_mcp.answers``, imported on first call so the server starts fast.
"""

from __future__ import annotations

from typing import Annotated

from mcp_types import CallToolResult
from pydantic import Field

from kb_mcp.models import KnowledgeAnswer, ProvenanceAnswer
from kb_mcp.tools.common import (
    DEFAULT_TOKEN_BUDGET,
    MAX_TOKEN_BUDGET,
    MIN_TOKEN_BUDGET,
    BudgetArg,
    Ctx,
    ShaArg,
    clamp,
    respond,
    serve_context,
    tool_errors,
)

TargetArg = Annotated[
    str,
    Field(
        description="A logical key ('import:pkg.a->pkg.b', 'public:pkg.Name'), a dotted path "
        "('pkg.mod.Class.method'), a module ('pkg.mod') or a repository-relative file ('pkg/mod.py')."
    ),
]


def get_knowledge(
    target: TargetArg, ctx: Ctx, *, sha: ShaArg = None, token_budget: BudgetArg = None
) -> Annotated[CallToolResult, KnowledgeAnswer]:
    """Get the grounded knowledge units about a symbol, module, file or logical key of the indexed
    repository: import edges, public API, routes, entities, handlers, call edges, process paths.

    Each unit says what the code does (payload), where it is grounded (provenance
    'file:start-end@sha'), how it was derived (method, confidence) and whether it still holds at the
    newest indexed commit (freshness: current, or stale with last_true_at). Units are ranked (the
    target's own units first, library code before tests) and trimmed to token_budget; 'omitted'
    counts what did not fit, per kind. Use find_provenance for "what is this line?", list_knowledge
    to browse keys.
    """
    from kb_mcp.answers.knowledge import knowledge_answer

    budget = clamp(token_budget, DEFAULT_TOKEN_BUDGET, MIN_TOKEN_BUDGET, MAX_TOKEN_BUDGET)
    with tool_errors():
        return respond(knowledge_answer(serve_context(ctx), target, sha, budget))


def find_provenance(
    file: Annotated[str, Field(description="Repository-relative path with / separators: 'pkg/mod.py'.")],
    line: Annotated[int, Field(description="1-based line number in that file at that commit.")],
    ctx: Ctx,
    *,
    sha: ShaArg = None,
    token_budget: BudgetArg = None,
) -> Annotated[CallToolResult, ProvenanceAnswer]:
    """Find what a line of code belongs to and what knowledge is derived from it: the code spans
    (module, class, function, import, assignment) covering file:line at a commit, innermost first,
    and the knowledge units grounded on those spans (units on the innermost span first).

    Every unit carries provenance 'file:start-end@sha' and freshness. Use this to explain a line in
    an error trace or a diff; use get_knowledge to ask about a symbol by name.
    """
    from kb_mcp.answers.knowledge import provenance_answer

    budget = clamp(token_budget, DEFAULT_TOKEN_BUDGET, MIN_TOKEN_BUDGET, MAX_TOKEN_BUDGET)
    with tool_errors():
        return respond(provenance_answer(serve_context(ctx), file, line, sha, budget))
