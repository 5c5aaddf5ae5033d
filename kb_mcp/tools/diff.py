"""``diff_knowledge``: what changed in the knowledge between two indexed commits.

Declaration only; the answer comes from ``kb_mcp.answers.diff``, imported on first call.
"""

from __future__ import annotations

from typing import Annotated

from mcp_types import CallToolResult
from pydantic import Field

from kb_mcp.models import DiffAnswer
from kb_mcp.tools.common import (
    MAX_TOKEN_BUDGET,
    MIN_TOKEN_BUDGET,
    Ctx,
    clamp,
    respond,
    serve_context,
    tool_errors,
)

DEFAULT_DIFF_BUDGET = 8000


def diff_knowledge(
    base: Annotated[str, Field(description="The older indexed commit (sha, short sha, branch or tag).")],
    head: Annotated[str, Field(description="The newer indexed commit (sha, short sha, branch or tag).")],
    ctx: Ctx,
    *,
    token_budget: Annotated[
        int | None, Field(description=f"Max tokens of the answer (default {DEFAULT_DIFF_BUDGET}).")
    ] = None,
) -> Annotated[CallToolResult, DiffAnswer]:
    """Compare the knowledge of two indexed commits: per kind, the units added, removed, and changed
    (same kind and logical key, different content or grounding, shown as before/after), with
    provenance at each unit's own commit and totals. Same JSON as `kb diff --json`, plus each unit's
    summary and freshness; unit lists are trimmed to token_budget and 'omitted' counts the rest.
    """
    from kb_mcp.answers.diff import diff_answer

    budget = clamp(token_budget, DEFAULT_DIFF_BUDGET, MIN_TOKEN_BUDGET, MAX_TOKEN_BUDGET)
    with tool_errors():
        return respond(diff_answer(serve_context(ctx), base, head, budget))
