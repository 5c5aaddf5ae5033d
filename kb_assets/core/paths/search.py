"""Shortest call chains from one entry point to every sink it reaches (breadth-first search).

Nodes are functions; a call to a class is not followed (its ``__init__`` edge is), and a module is
only ever a start (script entry points). The search visits callees in dotted order, so among chains
of equal length the first found — the one whose steps sort first, level by level — is kept, and the
same commit always yields the same chains. A visited set makes cycles harmless. ``max_depth`` caps
the number of calls in a chain: functions at that depth are still checked for sinks but not
expanded, and when something was left unexplored the search reports itself ``truncated``.

Sinks are external calls the registry matches, and first-party callees it matches by name (a
repository may declare its own function a sink in ``.kb/sinks.yaml``).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from kb_assets.core.callgraph.graph import CallGraph
from kb_assets.core.callgraph.values import Def
from kb_assets.core.paths.entrypoints import EntryPoint
from kb_assets.core.paths.sinks import SinkRegistry, SinkRule


@dataclass(slots=True)
class Reached:
    """One sink reached from an entry point: the chain and the calls of the sink in its last step."""

    sink: str
    rule: SinkRule
    chain: tuple[Def, ...]
    sites: set[tuple[str, int, int]] = field(default_factory=set)
    """(path, span, line offset) of each call of the sink in the last step of the chain."""
    target: Def | None = None
    """The sink's own definition, when the sink is a first-party function."""


@dataclass(slots=True)
class Search:
    """The outcome of one entry point's search."""

    reached: dict[str, Reached]
    truncated: bool
    depth: int


def search(
    graph: CallGraph,
    entry: EntryPoint,
    registry: SinkRegistry,
    memo: dict[tuple[str, str | None], SinkRule | None],
) -> Search:
    """Every sink reachable from ``entry`` within the registry's depth cap, by shortest chain."""
    start = graph.nodes[entry.dotted]
    parents: dict[str, str | None] = {start.dotted: None}
    depth = {start.dotted: 0}
    queue = deque([start])
    reached: dict[str, Reached] = {}
    truncated = False
    while queue:
        node = queue.popleft()
        only_main = entry.main_only and node is start
        chain: tuple[Def, ...] | None = None
        for site in graph.externals.get(node.dotted, []):
            rule = _match(registry, memo, site.name, site.mode)
            if rule is None or (only_main and not site.main):
                continue
            chain = chain or _chain(graph, parents, node)
            found = reached.setdefault(site.name, Reached(site.name, rule, chain))
            if found.chain == chain:
                found.sites.add((site.path, site.span, site.offset))
        for edge in graph.callees(node.dotted):
            if only_main and not edge.main:
                continue
            rule = _match(registry, memo, edge.callee.dotted, None)
            if rule is not None:
                chain = chain or _chain(graph, parents, node)
                found = reached.setdefault(
                    edge.callee.dotted, Reached(edge.callee.dotted, rule, chain, target=edge.callee)
                )
                if found.chain == chain:
                    found.sites.update(edge.sites)
            callee = edge.callee
            if callee.kind != "function" or callee.dotted in depth:
                continue
            if depth[node.dotted] >= registry.max_depth:
                truncated = True
                continue
            depth[callee.dotted] = depth[node.dotted] + 1
            parents[callee.dotted] = node.dotted
            queue.append(callee)
    return Search(reached, truncated, max(depth.values()))


def _match(
    registry: SinkRegistry, memo: dict[tuple[str, str | None], SinkRule | None], name: str, mode: str | None
) -> SinkRule | None:
    key = (name, mode)
    if key not in memo:
        memo[key] = registry.match(name, mode)
    return memo[key]


def _chain(graph: CallGraph, parents: dict[str, str | None], node: Def) -> tuple[Def, ...]:
    """Entry point first, ``node`` last."""
    chain = [node]
    current = parents[node.dotted]
    while current is not None:
        chain.append(graph.nodes[current])
        current = parents[current]
    return tuple(reversed(chain))
