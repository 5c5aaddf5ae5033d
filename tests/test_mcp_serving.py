"""The MCP server around its tools: the knowledge diff, resources, many clients, a read-only store.

Runs over the same indexed fixture as ``test_mcp_tools`` (``tests.mcpfixtures``).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import anyio
import pytest
import sqlalchemy as sa
from mcp import Client, MCPError

from kb_resources.store.hex_ids import HexId
from kb_resources.store.knowledge_diff import knowledge_diff

if TYPE_CHECKING:
    from tests.mcpfixtures import IndexedShop

pytest_plugins = ["tests.mcpfixtures"]


EMBED = sa.text(
    "UPDATE artifact SET embedding = CAST(:v AS vector), embedding_model_id = 'stub' WHERE artifact_id = :a"
).bindparams(sa.bindparam("a", type_=HexId()))


def _keys(units: list[dict[str, Any]]) -> list[str]:
    return [u["logical_key"] for u in units]


def test_knowledge_diff_added_removed_changed(shop: IndexedShop) -> None:
    """Between the two commits: the new tax import is added, the dropped pricing import removed, and
    ``public:shop.total`` changed (same key, new id); units sit at their own commit."""
    first, head = shop.shas
    with shop.context.store.engine.connect() as conn:
        diff = knowledge_diff(conn, first, head).as_json()
    assert (diff["base"], diff["head"]) == (first, head)
    imports, public = diff["kinds"]["import_edge"], diff["kinds"]["public_symbol"]
    assert _keys(imports["added"]) == ["import:shop.orders->shop.tax"]
    assert _keys(imports["removed"]) == ["import:shop.api->shop.pricing"]
    assert imports["changed"] == []
    assert public["added"] == public["removed"] == []
    [pair] = public["changed"]
    assert pair["before"]["logical_key"] == pair["after"]["logical_key"] == "public:shop.total"
    assert pair["before"]["artifact_id"] in shop.export(first)
    assert pair["after"]["artifact_id"] in shop.export(head)
    assert f"shop/orders.py:17-19@{first}" in pair["before"]["provenance"]
    assert f"shop/orders.py:18-20@{head}" in pair["after"]["provenance"]
    assert imports["removed"][0]["provenance"] == [f"shop/api.py:4-4@{first}"]
    totals = diff["totals"]
    assert totals["unchanged"] == len(set(shop.export(first)) & set(shop.export(head)))
    assert json.dumps(diff, sort_keys=True) == json.dumps(knowledge_diff_again(shop), sort_keys=True)


def knowledge_diff_again(shop: IndexedShop) -> dict[str, Any]:
    """The diff computed a second time (it must be identical: stable JSON)."""
    with shop.context.store.engine.connect() as conn:
        return knowledge_diff(conn, *shop.shas).as_json()


def test_diff_knowledge_tool_is_kb_diff_json_plus_freshness(shop: IndexedShop) -> None:
    """The tool returns the shared diff (refs resolved), each unit with summary and freshness; the
    removed import is stale, last true at the base commit."""
    first, head = shop.shas
    answer = shop.answer("diff_knowledge", {"base": "main~1", "head": "main"})
    expected = knowledge_diff_again(shop)
    assert (answer["base"], answer["head"], answer["totals"]) == (first, head, expected["totals"])
    for kind, part in expected["kinds"].items():
        got = answer["kinds"][kind]
        for section in ("added", "removed"):
            assert (
                [{k: u[k] for k in part[section][0]} for u in got[section]] == part[section]
                if part[section]
                else True
            )
    [removed] = answer["kinds"]["import_edge"]["removed"]
    assert removed["freshness"] == {"status": "stale", "as_of": head, "last_true_at": first}
    assert removed["summary"] == "shop.api imports shop.pricing (first-party)"
    small = shop.answer("diff_knowledge", {"base": first, "head": head, "token_budget": 200})
    assert small["omitted"]["total"] > 0
    assert small["totals"] == expected["totals"]


def test_resources_overview_unit_and_file(shop: IndexedShop) -> None:
    """``kb://overview`` counts the newest snapshot; ``kb://unit/ID`` is the unit with provenance and
    freshness; ``kb://file/PATH`` lists the units grounded in that file."""
    head = shop.shas[-1]
    exported = shop.export(head)

    async def read(uri: str) -> Any:
        async with Client(shop.server) as client:
            result = await client.read_resource(uri)
            return json.loads(result.contents[0].text)  # type: ignore[union-attr]

    overview = anyio.run(read, "kb://overview")
    assert overview["newest_indexed"] == head
    assert overview["branch"] == "main"
    assert sum(overview["counts"].values()) == len(exported)
    some_id = sorted(exported)[0]
    unit = anyio.run(read, f"kb://unit/{some_id}")
    assert unit["artifact_id"] == some_id
    assert unit["freshness"]["status"] == "current"
    assert unit["grounding"] == exported[some_id]["grounding"]
    in_file = anyio.run(read, "kb://file/shop/tax.py")
    assert in_file["file"] == "shop/tax.py"
    assert in_file["sha"] == head
    grounded_in_tax = {
        a for a, r in exported.items() if any(g["file"] == "shop/tax.py" for g in r["grounding"])
    }
    assert {u["artifact_id"] for u in in_file["units"]} == grounded_in_tax


def test_unknown_unit_resource_is_an_error(shop: IndexedShop) -> None:
    """A unit id that no indexed commit holds is a resource error, not a crash."""

    async def read(uri: str) -> str:
        async with Client(shop.server) as client:
            try:
                await client.read_resource(uri)
            except MCPError as err:
                return err.message
        return "no error"

    assert "no indexed commit holds" in anyio.run(read, "kb://unit/" + "0" * 64)
    assert "not an artifact id" in anyio.run(read, "kb://unit/DROP%20TABLE")


def test_many_clients_at_once(shop: IndexedShop) -> None:
    """Sixteen concurrent sessions (tools run on worker threads sharing one pool) all get the same
    answers as a lone client."""
    calls: list[tuple[str, dict[str, Any]]] = [
        ("get_knowledge", {"target": "shop.orders"}),
        ("find_provenance", {"file": "shop/api.py", "line": 8}),
    ]
    alone = [shop.answer(name, args) for name, args in calls]
    results: list[Any] = []

    async def client(i: int) -> None:
        name, args = calls[i % 2]
        results.append((i % 2, (await shop.acall(name, args)).structured_content))

    async def many() -> None:
        async with anyio.create_task_group() as tg:
            for i in range(16):
                tg.start_soon(client, i)

    anyio.run(many)
    assert len(results) == 16
    assert all(content == alone[which] for which, content in results)


def test_the_servers_connections_cannot_write(shop: IndexedShop) -> None:
    """The server's engine opens read-only transactions: an INSERT through it fails in PostgreSQL."""
    with shop.context.store.engine.connect() as conn, pytest.raises(sa.exc.DBAPIError, match="read-only"):
        conn.execute(sa.text("DELETE FROM snapshot_part"))
    with shop.context.store.engine.connect() as conn:
        assert conn.scalar(sa.text("SELECT count(*) FROM snapshot_entry")) > 0


def test_tool_errors_never_leak_internals(shop: IndexedShop) -> None:
    """Errors are one readable sentence for the model: no SQL, no traceback."""
    checks: list[tuple[str, dict[str, Any]]] = [
        ("find_provenance", {"file": "shop/none.py", "line": 1}),
        ("get_knowledge", {"target": "'; DROP TABLE artifact; --"}),
    ]
    for name, args in checks:
        text = shop.error(name, args)
        assert "Traceback" not in text
        assert "SELECT" not in text


def test_nearest_artifacts_reads_embedded_snapshots(shop: IndexedShop) -> None:
    """Once a snapshot is embedded, the semantic read finds the embedding model and ranks the
    snapshot's units by cosine distance (checked inside a transaction that is rolled back)."""
    from kb_resources.store import reads

    head = shop.shas[-1]
    ids = sorted(shop.export(head))
    engine = sa.create_engine(shop.env.db_url)
    try:
        with engine.connect() as conn:
            assert reads.embedding_model(conn, head) is None
            for i, aid in enumerate(ids):
                vector = "[" + ",".join("1" if j == i else "0" for j in range(384)) + "]"
                conn.execute(EMBED, {"v": vector, "a": aid})
            assert reads.embedding_model(conn, head) == "stub"
            query = [0.0] * 384
            query[2], query[0] = 1.0, 0.5
            nearest = reads.nearest_artifacts(conn, head, "stub", query, 2)
            assert [aid for aid, _ in nearest] == [ids[2], ids[0]]
            assert nearest[0][1] < nearest[1][1]
            conn.rollback()
    finally:
        engine.dispose()
