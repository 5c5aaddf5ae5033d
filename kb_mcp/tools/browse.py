"""``list_knowledge`` and ``search_knowledge``: browsing and searching a snapshot's units.

Declarations only; the answers come from ``kb_mcp.answers``, imported on first call.
"""

from __future__ import annotations

from typing import Annotated

from mcp_types import CallToolResult
from pydantic import Field

from kb_mcp.models import ListAnswer, SearchAnswer
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

DEFAULT_LIMIT = 50
MAX_LIMIT = 200
DEFAULT_K = 10
MAX_K = 100


def list_knowledge(
    ctx: Ctx,
    *,
    kind: Annotated[
        str | None, Field(description="Only this kind: import_edge, public_symbol, api_route, entity, ...")
    ] = None,
    prefix: Annotated[
        str | None, Field(description="Only logical keys starting with this, e.g. 'import:pkg.mod->'.")
    ] = None,
    sha: ShaArg = None,
    limit: Annotated[
        int | None, Field(description=f"Page size (default {DEFAULT_LIMIT}, at most {MAX_LIMIT}).")
    ] = None,
    cursor: Annotated[str | None, Field(description="next_cursor of the previous page, to continue.")] = None,
) -> Annotated[CallToolResult, ListAnswer]:
    """List the knowledge units of the indexed repository, one page at a time: logical keys in
    code-point order, each with a one-line summary, kind, method, confidence, provenance and freshness.

    Filter with kind and/or a logical-key prefix (keys look like 'import:A->B', 'public:PKG.NAME',
    'api:METHOD PATH', 'entity:DOTTED', 'call:A->B'). Pass next_cursor back as cursor for the next
    page. Use get_knowledge on a key to read the full unit.
    """
    from kb_mcp.answers.listing import list_answer

    size = clamp(limit, DEFAULT_LIMIT, 1, MAX_LIMIT)
    with tool_errors():
        answer = list_answer(serve_context(ctx), kind=kind, prefix=prefix, sha=sha, limit=size, cursor=cursor)
        return respond(answer)


def search_knowledge(
    query: Annotated[str, Field(description="What you are looking for, in words or identifiers.")],
    ctx: Ctx,
    *,
    sha: ShaArg = None,
    k: Annotated[int | None, Field(description=f"How many units at most (default {DEFAULT_K}).")] = None,
    token_budget: BudgetArg = None,
) -> Annotated[CallToolResult, SearchAnswer]:
    """Search the repository's knowledge units by meaning (semantic similarity of the query to each
    unit), best first, trimmed to token_budget with 'omitted' counts.

    Needs embeddings from `kb embed`. When the snapshot has none, the answer is not an error: its
    status is 'embeddings_absent', its message says what to do, and it falls back to keyword
    matching (ranking 'lexical'). For an exact symbol, module or file, get_knowledge is better.
    """
    from kb_mcp.answers.search import search_answer

    budget = clamp(token_budget, DEFAULT_TOKEN_BUDGET, MIN_TOKEN_BUDGET, MAX_TOKEN_BUDGET)
    size = clamp(k, DEFAULT_K, 1, MAX_K)
    with tool_errors():
        return respond(search_answer(serve_context(ctx), query, sha, size, budget))
