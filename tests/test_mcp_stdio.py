"""The MCP server as a client meets it: ``python -m kb_mcp`` over stdio, and its refusals.

One real subprocess session (spawned by the SDK's stdio client) asks about the indexed fixture
and gets the units ``kb export`` lists; a store that is empty or whose schema is not at head makes
the server stop with one line on stderr and the CLI's exit code.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import TYPE_CHECKING, Any

import anyio
import sqlalchemy as sa
from mcp import Client, StdioServerParameters

if TYPE_CHECKING:
    from tests.conftest import PgTestServer
    from tests.mcpfixtures import IndexedShop

pytest_plugins = ["tests.mcpfixtures"]


def _server_env(shop: IndexedShop) -> dict[str, str]:
    """What the server needs from the environment: the shop's isolated knowbase settings."""
    return {**shop.env.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


def test_a_real_stdio_session_gets_grounded_answers(shop: IndexedShop) -> None:
    """Spawned as ``python -m kb_mcp REPO``, the server lists its five tools and answers
    get_knowledge and find_provenance with the same units ``kb export`` has at HEAD."""
    head = shop.shas[-1]
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "kb_mcp", str(shop.repo)],
        env=_server_env(shop),
        cwd=str(shop.repo),
    )

    async def session() -> tuple[set[str], Any, Any, str]:
        async with Client(params, read_timeout_seconds=120) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            knowledge = await client.call_tool("get_knowledge", {"target": "shop.orders.total"})
            line = await client.call_tool("find_provenance", {"file": "shop/tax.py", "line": 8})
            overview = await client.read_resource("kb://overview")
            return tools, knowledge.structured_content, line.structured_content, overview.contents[0].text  # type: ignore[union-attr]

    tools, knowledge, line, overview = anyio.run(session)
    assert tools == {
        "find_provenance",
        "get_knowledge",
        "search_knowledge",
        "list_knowledge",
        "diff_knowledge",
    }
    exported = shop.export(head)
    [top, *_] = knowledge["units"]
    assert top["logical_key"] == "public:shop.total"
    assert top["grounding"] == exported[top["artifact_id"]]["grounding"]
    assert f"shop/orders.py:18-20@{head}" in top["provenance"]
    assert [s["fq_symbol_path"] for s in line["spans"]] == ["with_tax", "<module>"]
    assert head in overview


def test_an_empty_store_stops_the_server_with_exit_2(shop: IndexedShop, pg_server: PgTestServer) -> None:
    """Against a database nothing was indexed into, the server says so on stderr and exits 2."""
    database = pg_server.create_database()
    try:
        env = {**_server_env(shop), "KB_DB_URL": pg_server.url(database)}
        proc = subprocess.run(
            [sys.executable, "-m", "kb_mcp", str(shop.repo)],
            env=env,
            stdin=subprocess.PIPE,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        pg_server.drop_database(database)
    assert proc.returncode == 2, proc.stderr
    assert "nothing in" in proc.stderr
    assert "kb index" in proc.stderr
    assert proc.stdout == ""


def test_a_schema_not_at_head_stops_the_server_with_exit_3(
    shop: IndexedShop, pg_server: PgTestServer
) -> None:
    """A store stamped with a revision this program does not know (a newer knowbase migrated it)
    is refused: one line on stderr, exit 3, nothing on stdout."""
    database = pg_server.create_database()
    try:
        engine = sa.create_engine(pg_server.url(database))
        with engine.begin() as conn:
            conn.execute(sa.text("CREATE TABLE alembic_version (version_num varchar(32) PRIMARY KEY)"))
            conn.execute(sa.text("INSERT INTO alembic_version VALUES ('9999_from_the_future')"))
        engine.dispose()
        env = {**_server_env(shop), "KB_DB_URL": pg_server.url(database)}
        proc = subprocess.run(
            [sys.executable, "-m", "kb_mcp", str(shop.repo)],
            env=env,
            stdin=subprocess.PIPE,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        pg_server.drop_database(database)
    assert proc.returncode == 3, proc.stderr
    assert "9999_from_the_future" in proc.stderr
    assert "newer knowbase" in proc.stderr
    assert proc.stdout == ""
