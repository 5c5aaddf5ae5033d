"""``python -m kb_mcp [REPO] [--db-url URL] [--http --port N]``: the knowbase MCP server."""

from __future__ import annotations

import sys

from kb_mcp.cli import main

if __name__ == "__main__":
    sys.exit(main())
