"""``python -m kb_mcp [REPO]`` and ``kb serve [REPO]``: start the MCP server (stdio, or HTTP on loopback).

The server is built and answering before the store is open (``kb_mcp.launch``); nothing here
imports Dagster. A store that is unreachable, empty or not at the schema head stops the server
with one line on stderr and the CLI's exit code (2 bad input, 3 store); stdout stays reserved for
the protocol.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

LOOPBACK = "127.0.0.1"
DEFAULT_PORT = 8765


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Flags of ``kb serve`` (REPO and --db-url come from the common ``kb`` flags)."""
    p.add_argument("--http", action="store_true", help="serve streamable HTTP on 127.0.0.1 instead of stdio")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"HTTP port (default {DEFAULT_PORT})")


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``python -m kb_mcp``."""
    p = argparse.ArgumentParser(prog="kb serve", description="knowbase MCP server (read-only)")
    p.add_argument("repo", nargs="?", default=".", metavar="REPO", help="a path inside a git repository")
    p.add_argument("--db-url", default=None, help="store URL (default: KB_DB_URL, else the embedded one)")
    add_arguments(p)
    return p


def run(args: argparse.Namespace) -> int:
    """Build the server, start opening the store, and serve until the client goes away."""
    from kb_mcp.launch import Opening
    from kb_mcp.server import build_server

    opening = Opening(args.repo, args.db_url)
    server = build_server(opening)
    opening.start()
    try:
        with opening.serving():
            if args.http:
                server.run("streamable-http", host=LOOPBACK, port=args.port)
            else:
                server.run("stdio")
    except KeyboardInterrupt:
        pass
    finally:
        code = opening.exit_code()
        opening.close()
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m kb_mcp``."""
    return run(build_parser().parse_args(argv))
