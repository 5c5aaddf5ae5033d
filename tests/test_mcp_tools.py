"""The MCP tools, through the SDK's in-memory client, over a store indexed by the real CLI.

Every expectation is checked against ``kb export`` of the same commit or against the fixture's
source (``fixtures/mcp_shop``), never against the server's own reads.
"""

from __future__ import annotations

import subprocess
from typing import TYPE_CHECKING, Any

import pytest
from mcp_types import Tool

if TYPE_CHECKING:
    from tests.mcpfixtures import IndexedShop

pytest_plugins = ["tests.mcpfixtures"]


TOOLS = {"find_provenance", "get_knowledge", "search_knowledge", "list_knowledge", "diff_knowledge"}
RECORD_KEYS = (
    "artifact_id",
    "kind",
    "logical_key",
    "extractor",
    "method",
    "confidence",
    "payload",
    "grounding",
)


def _by_key(units: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {u["logical_key"]: u for u in units}


def test_tools_are_listed_read_only_with_output_schemas(shop: IndexedShop) -> None:
    """The five tools of CONTRACT.md are offered, each read-only, described and typed."""
    import anyio
    from mcp import Client

    async def list_tools() -> list[Tool]:
        async with Client(shop.server) as client:
            return list((await client.list_tools()).tools)

    tools = anyio.run(list_tools)
    assert {t.name for t in tools} == TOOLS
    for tool in tools:
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is True
        assert tool.output_schema
        assert "properties" in tool.output_schema
        assert len(tool.description or "") > 100


def test_get_knowledge_units_say_what_kb_export_says(shop: IndexedShop) -> None:
    """A unit's record fields equal ``kb export``'s record for the same artifact at that commit, and
    it carries provenance ``file:start-end@sha``, method, confidence and freshness."""
    head = shop.shas[-1]
    answer = shop.answer("get_knowledge", {"target": "shop.orders.total"})
    assert answer["sha"] == head
    exported = shop.export(head)
    units = _by_key(answer["units"])
    unit = units["public:shop.total"]
    assert answer["units"][0]["logical_key"] == "public:shop.total"  # the symbol's own unit ranks first
    assert {k: unit[k] for k in RECORD_KEYS} == {k: exported[unit["artifact_id"]][k] for k in RECORD_KEYS}
    assert f"shop/orders.py:18-20@{head}" in unit["provenance"]
    assert unit["freshness"] == {"status": "current", "as_of": head, "last_true_at": head}
    assert unit["method"] == "deterministic"
    assert unit["confidence"] == 1.0


def test_get_knowledge_resolves_modules_files_and_keys(shop: IndexedShop) -> None:
    """A module reaches its import edges both ways, a file the units grounded in it, a logical key
    exactly its unit; backslashes in a file path are normalized."""
    by_module = _by_key(shop.answer("get_knowledge", {"target": "shop.orders"})["units"])
    assert {
        "import:shop.orders->shop.pricing",
        "import:shop.orders->shop.tax",
        "import:shop->shop.orders",
    } <= set(by_module)
    by_file = _by_key(shop.answer("get_knowledge", {"target": "shop\\api.py"})["units"])
    assert "import:shop.api->shop.orders" in by_file
    by_key = shop.answer("get_knowledge", {"target": "import:shop.orders->shop.tax"})
    assert [u["logical_key"] for u in by_key["units"]] == ["import:shop.orders->shop.tax"]
    assert by_key["resolved_as"] == ["logical key import:shop.orders->shop.tax"]


def test_unknown_target_is_a_tool_error_with_a_suggestion(shop: IndexedShop) -> None:
    """A target that matches nothing is an ordinary tool error naming close matches."""
    text = shop.error("get_knowledge", {"target": "shop.orders.totl"})
    assert "nothing matches 'shop.orders.totl'" in text
    assert "shop.orders.total" in text
    text = shop.error("get_knowledge", {"target": "shop/order.py"})
    assert "no file 'shop/order.py'" in text
    assert "shop/orders.py" in text


def test_as_of_queries_and_freshness_across_commits(shop: IndexedShop) -> None:
    """Asked at the first commit, a unit rewritten since is stale (last true at the first commit)
    with provenance at the first commit's lines; a unit unchanged since is current."""
    first, head = shop.shas
    units = _by_key(shop.answer("get_knowledge", {"target": "shop", "sha": first[:10]})["units"])
    total, order = units["public:shop.total"], units["public:shop.Order"]
    assert total["freshness"] == {"status": "stale", "as_of": head, "last_true_at": first}
    assert f"shop/orders.py:17-19@{first}" in total["provenance"]
    assert order["freshness"] == {"status": "current", "as_of": head, "last_true_at": head}
    assert f"shop/orders.py:6-14@{first}" in order["provenance"]
    assert total["artifact_id"] in shop.export(first)


def test_unindexed_and_unknown_commits_are_tool_errors(shop: IndexedShop) -> None:
    """A commit that exists but is not indexed, and a revision git does not know, are tool errors
    that say what to do instead."""
    tree = subprocess.run(
        ["git", "-C", str(shop.repo), "rev-parse", "HEAD^{tree}"], capture_output=True, text=True, check=True
    ).stdout.strip()
    dangling = subprocess.run(
        ["git", "-C", str(shop.repo), "commit-tree", tree, "-p", "HEAD", "-m", "not indexed"],
        capture_output=True,
        text=True,
        check=True,
        env={
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@t",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t",
        },
    ).stdout.strip()
    text = shop.error("get_knowledge", {"target": "shop", "sha": dangling})
    assert "is not indexed" in text
    assert shop.shas[-1][:12] in text
    text = shop.error("list_knowledge", {"sha": "no-such-branch"})
    assert "unknown revision" in text


def test_find_provenance_explains_a_line(shop: IndexedShop) -> None:
    """Line 20 of shop/orders.py lies in ``total`` inside the module; the unit grounded on
    ``total`` comes back first."""
    head = shop.shas[-1]
    answer = shop.answer("find_provenance", {"file": "./shop//orders.py", "line": 20})
    assert answer["file"] == "shop/orders.py"
    assert [(s["fq_symbol_path"], s["start_line"], s["end_line"]) for s in answer["spans"]] == [
        ("total", 18, 20),
        ("<module>", 1, 20),
    ]
    assert answer["units"][0]["logical_key"] == "public:shop.total"
    assert answer["spans"][0]["provenance"] == f"shop/orders.py:18-20@{head}"


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("../etc/passwd", "'..' segments"),
        ("shop/../../etc/passwd", "'..' segments"),
        ("/etc/passwd", "absolute"),
        ("C:\\Windows\\win.ini", "absolute"),
        ("shop\\..\\..\\x.py", "'..' segments"),
        ("shop/orders.py\x00.txt", "control characters"),
    ],
)
def test_unsafe_paths_are_refused(shop: IndexedShop, path: str, reason: str) -> None:
    """Paths that could leave the repository are tool errors, never rewritten into another file."""
    text = shop.error("find_provenance", {"file": path, "line": 1})
    assert "not a repository-relative file path" in text
    assert reason in text


def test_line_out_of_range_is_a_tool_error(shop: IndexedShop) -> None:
    """A line past the end of the file (or below 1) says how many lines the file has."""
    for line in (21, 0, -5):
        text = shop.error("find_provenance", {"file": "shop/orders.py", "line": line})
        assert "out of range" in text
        assert "has 20 lines" in text


def test_token_budget_trims_by_rank_and_reports_omitted(shop: IndexedShop) -> None:
    """A small budget keeps the best-ranked units that fit and counts every other one per kind;
    nothing is silently dropped and the answer's estimate stays within the budget."""
    full = shop.answer("get_knowledge", {"target": "shop", "token_budget": 100_000})
    assert full["omitted"]["total"] == 0
    assert len(full["units"]) == full["matched"]
    small = shop.answer("get_knowledge", {"target": "shop", "token_budget": 900})
    kept = [u["artifact_id"] for u in small["units"]]
    assert kept
    assert small["omitted"]["total"] > 0
    assert len(kept) + small["omitted"]["total"] == small["matched"] == full["matched"]
    order = [u["artifact_id"] for u in full["units"]]
    assert [order.index(aid) for aid in kept] == sorted(order.index(aid) for aid in kept)  # rank order kept
    assert sum(small["omitted"]["by_kind"].values()) == small["omitted"]["total"]
    assert small["omitted"]["hint"]
    assert small["tokens_used"] <= 900


def test_huge_budgets_and_limits_are_clamped(shop: IndexedShop) -> None:
    """Absurd token budgets and page sizes are capped rather than honoured or refused."""
    assert shop.answer("get_knowledge", {"target": "shop", "token_budget": 10**12})["token_budget"] == 100_000
    page = shop.answer("list_knowledge", {"limit": 10**9})
    assert page["next_cursor"] is None
    assert len(page["items"]) == page["total"]


def test_list_knowledge_pages_round_trip(shop: IndexedShop) -> None:
    """Following next_cursor with limit 2 visits every key of ``kb export`` once, in order."""
    head = shop.shas[-1]
    expected = sorted((r["logical_key"], r["kind"], r["artifact_id"]) for r in shop.export(head).values())
    seen, cursor = [], None
    while True:
        args = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        page = shop.answer("list_knowledge", args)
        assert page["total"] == len(expected)
        seen += [(i["logical_key"], i["kind"], i["artifact_id"]) for i in page["items"]]
        assert all(i["summary"] and i["provenance"] for i in page["items"])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == expected
    prefixed = shop.answer("list_knowledge", {"prefix": "import:shop.orders->", "kind": "import_edge"})
    assert [i["logical_key"] for i in prefixed["items"]] == [
        "import:shop.orders->shop.pricing",
        "import:shop.orders->shop.tax",
    ]


def test_bad_cursors_are_tool_errors(shop: IndexedShop) -> None:
    """A forged cursor, or one reused with other filters, is refused with what to do."""
    cursor = shop.answer("list_knowledge", {"limit": 1})["next_cursor"]
    assert "different kind or prefix" in shop.error("list_knowledge", {"cursor": cursor, "kind": "entity"})
    assert "invalid cursor" in shop.error("list_knowledge", {"cursor": "not-a-cursor"})
    assert "unknown kind" in shop.error("list_knowledge", {"kind": "imports"})


def test_search_without_embeddings_is_a_clear_message_not_an_error(shop: IndexedShop) -> None:
    """Before ``kb embed`` the search answers (not an error) that embeddings are absent and how to get
    them, and still offers keyword matches."""
    answer = shop.answer("search_knowledge", {"query": "tax on totals"})
    assert answer["status"] == "embeddings_absent"
    assert answer["ranking"] == "lexical"
    assert "kb embed" in answer["message"]
    assert "import:shop.orders->shop.tax" in {u["logical_key"] for u in answer["units"]}
