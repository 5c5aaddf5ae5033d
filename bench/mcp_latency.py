"""MCP server figures: start-up (spawn -> ``initialize`` answered) and tool latency, over stdio.

    KB_HOME=... python bench/mcp_latency.py REPO [--db-url URL] [--calls 300] [--starts 7]

Talks raw JSON-RPC over the server's pipes (no client library), so the figures are the server's:
the time from writing a request to reading its response line. Start-up is measured for
``python -m kb_mcp REPO`` and, as the floor, for an empty MCP SDK server in the same interpreter.
Latency is measured on one long-lived server after a warm-up call (which waits for the newest
snapshot to be loaded), over targets taken from the store itself: public-symbol keys, their dotted
names, and the files and lines of their provenance. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"},
    },
}
EMPTY_SERVER = "from mcp.server.mcpserver import MCPServer; MCPServer('empty').run()"


class Session:
    """One server process spoken to over its stdin/stdout."""

    def __init__(self, argv: Sequence[str], env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            argv,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
        )
        self._id = 0

    def request(self, method: str, params: dict[str, Any]) -> tuple[dict[str, Any], float]:
        """Send one request; return its response and the seconds it took."""
        self._id += 1
        started = time.perf_counter()
        assert self.proc.stdin
        assert self.proc.stdout
        self.proc.stdin.write(
            json.dumps({"jsonrpc": "2.0", "id": self._id, "method": method, "params": params}) + "\n"
        )
        while True:
            message = json.loads(self.proc.stdout.readline())
            if message.get("id") == self._id:
                return message, time.perf_counter() - started

    def call(self, tool: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], float]:
        """Call a tool; return its structured content and the seconds it took."""
        message, took = self.request("tools/call", {"name": tool, "arguments": arguments})
        result = message["result"]
        if result.get("isError"):
            raise RuntimeError(f"{tool}({arguments}) failed: {result['content'][0]['text']}")
        return result["structuredContent"], took

    def close(self) -> None:
        """Close stdin and wait for the server to exit."""
        assert self.proc.stdin
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def startup(argv: Sequence[str], env: dict[str, str] | None = None) -> tuple[Session, float]:
    """Spawn a server and complete the handshake; return it and the seconds to ``initialize``."""
    started = time.perf_counter()
    session = Session(argv, env)
    assert session.proc.stdin
    assert session.proc.stdout
    session.proc.stdin.write(json.dumps(INIT) + "\n")
    response = json.loads(session.proc.stdout.readline())
    took = time.perf_counter() - started
    assert "result" in response, response
    session.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    return session, took


def startups(argv: Sequence[str], n: int) -> list[float]:
    """Start-up seconds of ``n`` fresh servers."""
    times = []
    for _ in range(n):
        session, took = startup(argv)
        session.close()
        times.append(took)
    return times


def targets(session: Session, n: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """get_knowledge and find_provenance arguments sampled evenly from the store's public symbols."""
    items: list[dict[str, Any]] = []
    cursor = None
    while len(items) < 3 * n:
        args: dict[str, Any] = {"kind": "public_symbol", "limit": 200} | (
            {"cursor": cursor} if cursor else {}
        )
        page, _ = session.call("list_knowledge", args)
        items += page["items"]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    picked = items[:: max(1, len(items) // n)][:n]
    knowledge: list[dict[str, Any]] = []
    lines: list[dict[str, Any]] = []
    for i, item in enumerate(picked):
        where = item["provenance"][-1].rsplit("@", 1)[0]
        file, _, span = where.rpartition(":")
        dotted = item["logical_key"].removeprefix("public:")
        knowledge.append({"target": [item["logical_key"], dotted, file][i % 3]})
        lines.append({"file": file, "line": int(span.split("-")[0])})
    return knowledge, lines


def searches(repo: str, queries: Sequence[str], env: dict[str, str]) -> str:
    """A fresh server's first ``search_knowledge`` (it loads the query's model) and the p50 of the
    next ones, as one line; the snapshot must have been embedded (``kb embed``)."""
    session, _ = startup([sys.executable, "-m", "kb_mcp", repo], env)
    try:
        first, took = session.call("search_knowledge", {"query": queries[0], "k": 5})
        rest = [session.call("search_knowledge", {"query": q, "k": 5})[1] for q in queries[1:]]
    except RuntimeError as exc:
        return f"search_knowledge: not measured ({exc})"
    finally:
        session.close()
    return f"first search_knowledge (loads the model) {took:.2f} s ({first['status']}); " + figures(
        "then", rest
    )


def another_commit(session: Session, repo: str, arguments: dict[str, Any]) -> str:
    """The first question about the commit before the newest: its snapshot index is built from the
    newest one's (only units grounded in files that differ are read from the store)."""
    parent = subprocess.run(
        ["git", "-C", repo, "rev-parse", "HEAD~1"], capture_output=True, text=True, check=False
    ).stdout.strip()
    if not parent:
        return "first call about HEAD~1: no parent commit"
    try:
        _, took = session.call("get_knowledge", {**arguments, "sha": parent})
    except RuntimeError as exc:
        return f"first call about HEAD~1: not measured ({exc})"
    return f"first call about HEAD~1 (its index built from the newest one's): {took:.2f} s"


def memory(session: Session) -> str:
    """The server process's resident memory now and its peak so far (``/proc``)."""
    found = {}
    with open(f"/proc/{session.proc.pid}/status") as status:
        for line in status:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                found[name] = int(value.split()[0]) / 1024
    return f"server RSS {found.get('VmRSS', 0):.0f} MiB (peak {found.get('VmHWM', 0):.0f} MiB)"


def figures(label: str, seconds: Sequence[float]) -> str:
    """``label: p50 .. ms, p95 .. ms (n calls)``."""
    ms = sorted(s * 1000 for s in seconds)
    p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
    p50 = statistics.median(ms)
    return f"{label}: p50 {p50:.1f} ms, p95 {p95:.1f} ms, max {ms[-1]:.1f} ms ({len(ms)} calls)"


def main() -> int:
    """Run the measurements and print them."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo")
    parser.add_argument("--db-url", default=None)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--starts", type=int, default=7)
    args = parser.parse_args()
    server = [sys.executable, "-m", "kb_mcp", args.repo, *(["--db-url", args.db_url] if args.db_url else [])]
    print(f"load average before: {os.getloadavg()}")
    floor: list[float] = []
    ours: list[float] = []
    for _ in range(args.starts):  # interleaved, so both see the same machine
        floor += startups([sys.executable, "-c", EMPTY_SERVER], 1)
        ours += startups(server, 1)
    print(f"start-up, empty MCP SDK server: median {statistics.median(floor):.3f} s, min {min(floor):.3f} s")
    print(f"start-up, python -m kb_mcp:     median {statistics.median(ours):.3f} s, min {min(ours):.3f} s")
    session, _ = startup(server)
    warm_started = time.perf_counter()
    knowledge, lines = targets(session, args.calls)
    first = time.perf_counter() - warm_started
    print(f"first calls (wait for the store and the newest snapshot): {first:.2f} s; {memory(session)}")
    for arguments in knowledge[:10]:  # each code path once, outside the measurement
        session.call("get_knowledge", arguments)
    gk = [session.call("get_knowledge", a)[1] for a in knowledge]
    fp = [session.call("find_provenance", a)[1] for a in lines]
    units = sum(len(session.call("get_knowledge", a)[0]["units"]) for a in knowledge[:50]) / 50
    print(another_commit(session, args.repo, knowledge[0]) + f"; {memory(session)}")
    session.close()
    print(figures("get_knowledge", gk) + f", {units:.1f} units per answer")
    print(figures("find_provenance", fp))
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
