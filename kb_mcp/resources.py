"""MCP resources: the repository overview, one unit by id, and the units of one file (``kb://``).

Resources are for clients that attach context up front; the tools are for questions. The
registrations are light; what each says is computed by ``kb_mcp.answers.resources``.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

from kb_mcp.budget import compact_json
from kb_mcp.context import ContextSource


def register_resources(server: MCPServer[ContextSource], source: ContextSource) -> None:
    """Add the ``kb://`` resources to ``server``."""

    @server.resource(
        "kb://overview",
        name="overview",
        mime_type="application/json",
        description="The indexed repository at a glance: branch, newest indexed commit, "
        "unit counts per kind, gaps (files or constructs not understood).",
    )
    def read_overview() -> str:
        from kb_mcp.answers.resources import overview

        return compact_json(overview(source.get()))

    @server.resource(
        "kb://unit/{artifact_id}",
        name="unit",
        mime_type="application/json",
        description="One knowledge unit by artifact id: export record, provenance, freshness.",
    )
    def read_unit(artifact_id: str) -> str:
        from kb_mcp.answers.resources import unit_json

        return compact_json(unit_json(source.get(), artifact_id))

    @server.resource(
        "kb://file/{+path}",
        name="file",
        mime_type="application/json",
        description="The knowledge units grounded in one repository file, newest indexed commit.",
    )
    def read_file(path: str) -> str:
        from kb_mcp.answers.resources import file_json

        return compact_json(file_json(source.get(), path))
