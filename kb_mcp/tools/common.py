"""What every tool shares: reaching the context, error mapping, limits and the response shape.

Error policy (the MCP python-sdk's): a mistake the model can fix (``BadInputError``: unknown
target, line out of range, unindexed commit, unsafe path, bad cursor) becomes an ordinary tool
error whose text says what to try; a failure it cannot fix (the store went away) is a protocol
error. Answers are sent as compact JSON text plus the same data as structured content, so the
token estimate of an answer is the estimate of exactly what the model reads.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from kb_assets.core.errors import BadInputError, KbError
from kb_mcp.budget import compact_json
from kb_mcp.context import ContextSource, ServeContext

DEFAULT_TOKEN_BUDGET = 4000
MAX_TOKEN_BUDGET = 100_000
MIN_TOKEN_BUDGET = 200

READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
"""Every knowbase tool only reads an immutable, versioned store."""

Ctx = Context[ContextSource, Any]

ShaArg = Annotated[
    str | None, Field(description="Commit to read: sha, short sha, branch or tag (default: newest indexed).")
]
BudgetArg = Annotated[
    int | None, Field(description=f"Max tokens of the answer (default {DEFAULT_TOKEN_BUDGET}).")
]


def serve_context(ctx: Ctx) -> ServeContext:
    """The server's ``ServeContext``, from the lifespan's source (waiting while the store opens)."""
    return ctx.request_context.lifespan_context.get()


def clamp(value: int | None, default: int, low: int, high: int) -> int:
    """``value`` (or ``default``) forced into ``[low, high]``: huge requests are capped, not refused."""
    return max(low, min(high, default if value is None else value))


@contextmanager
def tool_errors() -> Iterator[None]:
    """Map knowbase's errors to MCP: fixable ones to tool errors, the rest to protocol errors."""
    try:
        yield
    except BadInputError as err:
        raise ToolError(err.message) from None
    except KbError as err:
        raise MCPError(code=INTERNAL_ERROR, message=err.message) from None
    except Exception as exc:
        if _is_store_failure(exc):
            raise MCPError(code=INTERNAL_ERROR, message="the knowledge store is unreachable") from None
        raise


def _is_store_failure(exc: Exception) -> bool:
    """Whether ``exc`` is the database going away (SQLAlchemy is loaded by then; checked lazily)."""
    from sqlalchemy import exc as sa_exc

    return isinstance(exc, sa_exc.OperationalError | sa_exc.InterfaceError)


def respond(answer: BaseModel) -> CallToolResult:
    """The tool result: compact JSON text (what the model reads) and the same structured content."""
    data = answer.model_dump(mode="json")
    return CallToolResult(
        content=[TextContent(type="text", text=compact_json(data))], structured_content=data
    )
