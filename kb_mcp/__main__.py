"""``python -m kb_mcp [REPO] [--db-url URL] [--http --port N]``: the knowbase MCP server."""

from __future__ import annotations

import sys

from kb_assets.core.collector import tune_collector
from kb_mcp.cli import main

if __name__ == "__main__":
    tune_collector()  # indexing a snapshot for its first question builds ~90k entries on Django
    sys.exit(main())
