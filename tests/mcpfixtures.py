"""The MCP server under test: a fixture repository indexed with the real CLI, served read-only.

``fixtures/mcp_shop`` has two commits: the second rewrites ``shop.orders.total`` (so
``public:shop.total`` changes identity), adds ``shop/tax.py`` (a new import edge) and drops an
import from ``shop/api.py`` (a removed edge); everything else keeps its artifact id. Both commits
are indexed through ``kb index`` into a database of their own, once per test session (test
modules load this file with ``pytest_plugins``), and a
``ServeContext`` is opened on it exactly as ``python -m kb_mcp`` opens one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult

from kb_mcp.context import ContextSource, ServeContext, open_context
from kb_mcp.server import build_server
from kb_resources.settings import Settings
from tests.conftest import PgTestServer
from tests.gitfixtures import build_repo
from tests.kbfixtures import KbEnv

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@dataclass
class IndexedShop:
    """The indexed fixture repository, its environment and an open serving context."""

    repo: Path
    shas: list[str]
    env: KbEnv
    context: ServeContext
    server: MCPServer[ContextSource]

    @property
    def settings(self) -> Settings:
        """Settings that point at this shop's store."""
        return Settings(kb_home=self.env.home, dagster_home=self.env.home / "dagster", db_url=self.env.db_url)

    def export(self, sha: str) -> dict[str, dict[str, Any]]:
        """``kb export --sha`` of a commit, by artifact id (what the units must agree with)."""
        result = self.env.kb("export", self.repo, "--sha", sha)
        assert result.code == 0, result.stderr
        return {r["artifact_id"]: r for r in result.jsonl()}

    def call(self, tool: str, arguments: Mapping[str, Any]) -> CallToolResult:
        """Call a tool through the SDK's in-memory client."""
        return anyio.run(partial(self.acall, tool, arguments))

    async def acall(self, tool: str, arguments: Mapping[str, Any]) -> CallToolResult:
        """Call a tool in a fresh in-memory client session (from async code)."""
        async with Client(self.server) as client:
            return await client.call_tool(tool, dict(arguments))

    def error(self, tool: str, arguments: Mapping[str, Any]) -> str:
        """The message of a call that must be a tool error."""
        result = self.call(tool, arguments)
        assert result.is_error, result.structured_content
        return str(result.content[0].text)  # type: ignore[union-attr]

    def answer(self, tool: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """A successful tool call's structured content (its text is the same JSON)."""
        result = self.call(tool, arguments)
        assert not result.is_error, result.content
        assert result.structured_content is not None
        text = result.content[0].text  # type: ignore[union-attr]
        assert json.loads(text) == result.structured_content
        return dict(result.structured_content)


def index_shop(pg_server: PgTestServer, root: Path) -> tuple[Path, list[str], KbEnv, str]:
    """Build the fixture repository under ``root`` and index every commit; (repo, shas, env, db)."""
    repo = root / "shop"
    shas = build_repo(FIXTURES / "mcp_shop", repo)
    database = pg_server.create_database()
    env = KbEnv(home=root / "kb_home", db_url=pg_server.url(database))
    for sha in shas:
        indexed = env.kb("index", repo, "--sha", sha)
        assert indexed.code == 0, indexed.stderr
    return repo, shas, env, database


@pytest.fixture(scope="session")
def shop(pg_server: PgTestServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[IndexedShop]:
    """Both commits of ``fixtures/mcp_shop`` indexed, and a server over a read-only context."""
    repo, shas, env, database = index_shop(pg_server, tmp_path_factory.mktemp("mcp"))
    settings = Settings(kb_home=env.home, dagster_home=env.home / "dagster", db_url=env.db_url)
    context = open_context(repo, settings)
    try:
        yield IndexedShop(repo, shas, env, context, build_server(context))
    finally:
        context.close()
        env.close()
        pg_server.drop_database(database)
