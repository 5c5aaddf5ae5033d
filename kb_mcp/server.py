"""``build_server``: the knowbase MCP server over an opened, read-only ``ServeContext``.

The context is opened by the caller (``kb_mcp.cli`` or a test) and injected through a typed
lifespan: every tool receives its source as ``ctx.request_context.lifespan_context``. The lifespan
does not close it; whoever opened it does, so one context serves many sessions (streamable HTTP)
or many in-memory test clients. Importing this module loads the MCP SDK and the tool declarations
only: the store's stack is imported when the store is opened.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from mcp.server.mcpserver import MCPServer

from kb_mcp.context import ContextSource
from kb_mcp.resources import register_resources
from kb_mcp.tools.browse import list_knowledge, search_knowledge
from kb_mcp.tools.common import READ_ONLY
from kb_mcp.tools.diff import diff_knowledge
from kb_mcp.tools.knowledge import find_provenance, get_knowledge

INSTRUCTIONS = """\
knowbase serves grounded, versioned knowledge about one git repository: import edges, public API,
routes, entities, event handlers, call edges and process paths, each bound to the code spans it came
from ('file:start-end@sha') at an indexed commit, with a freshness verdict against the newest indexed
commit of the branch. Start with get_knowledge on a symbol, module or file; use find_provenance to
explain a line; list_knowledge to browse keys; diff_knowledge to see what a change did. Every tool
takes an optional sha to ask about an older indexed commit. Read kb://overview for what is indexed.
"""

TOOLS = (get_knowledge, find_provenance, search_knowledge, list_knowledge, diff_knowledge)


def build_server(context: ContextSource) -> MCPServer[ContextSource]:
    """A knowbase MCP server whose tools and resources read ``context`` (an opened ``ServeContext``,
    or an ``Opening`` that is still opening one)."""

    @asynccontextmanager
    async def lifespan(_: MCPServer[ContextSource]) -> AsyncIterator[ContextSource]:
        yield context

    server: MCPServer[ContextSource] = MCPServer(
        "knowbase",
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        log_level="WARNING",
    )
    for tool in TOOLS:
        server.add_tool(tool, annotations=READ_ONLY, structured_output=True)
    register_resources(server, context)
    return server
