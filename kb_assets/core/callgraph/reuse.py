"""Replaying a file's log onto a graph by taking the previous commit's edges instead of adding
every call site again, for a process that keeps its graph from one commit to the next (``kb
watch``).

Replaying Django's 2,810 logs site by site (107,825 call sites into 72,575 per-file edges) took
~0.25 s of each warm commit. An edge is the fold of the sites that the logs holding its key add, in
path order, and then of what matching passed functions adds (``Passings.resolve``). So the previous
graph's edge is already this commit's edge, field for field, unless a log that held its key is not
replayed now (its file is resolved again, is gone, or is no longer parsed), a log resolved now holds
it, or passed functions added to it last time: those keys are *dirty* (``dirty_keys``) and are built
again from the sites of every log that holds them. A log with no dirty key is merged whole from its
``Digest``: its keys, in the order they first occur, mapped to the previous edges (one dictionary
update, in C), its nodes, its external calls grouped by caller, its parameter calls and arguments
(``replay_reusing``). Edges, nodes and externals come out in the order a site-by-site replay gives,
so the graph is the one every other build makes (``tests/test_call_graph_incremental.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from kb_assets.core.callgraph.passing import Gathered
from kb_assets.core.callgraph.resolutions import EDGE, EXTERNAL, NODE, PARAMETER_CALL, WIDTH, FileLog, replay
from kb_assets.core.callgraph.values import Def

if TYPE_CHECKING:
    from kb_assets.core.callgraph.graph import CallGraph, Edge, ExternalSite
    from kb_assets.core.callgraph.passing import Passings

Key = tuple[str, str]
"""An edge's (caller, callee) dotted paths."""


class Digest:
    """What replaying one log adds to a graph, grouped so that it can be merged at once."""

    __slots__ = ("externals", "keys", "nodes", "passing")

    def __init__(self, log: FileLog) -> None:
        keys: dict[Key, None] = {}
        nodes: dict[str, Def] = {}
        externals: dict[str, list[ExternalSite]] = {}
        passing = Gathered()
        ops, i, end = log.ops, 0, len(log.ops)
        while i < end:
            kind = ops[i]
            width = WIDTH[kind]  # type: ignore[index]
            if kind in (EDGE, NODE):
                caller: Def = ops[i + 1]  # type: ignore[assignment]
                nodes.setdefault(caller.dotted, caller)
                if kind == EDGE:
                    callee: Def = ops[i + 2]  # type: ignore[assignment]
                    nodes.setdefault(callee.dotted, callee)
                    keys[(caller.dotted, callee.dotted)] = None
            elif kind == EXTERNAL:
                externals.setdefault(ops[i + 1], []).append(ops[i + 2])  # type: ignore[arg-type]
            elif kind == PARAMETER_CALL:
                passing.parameter_call(ops[i + 1], ops[i + 2], ops[i + 3], ops[i + 4])  # type: ignore[arg-type]
            else:
                passing.add(ops[i + 1])  # type: ignore[arg-type]
            i += width
        self.keys: tuple[Key, ...] = tuple(keys)
        """The edge keys, in the order they first occur in the log."""
        self.nodes = tuple(nodes.items())
        """(dotted, definition) in the order a replay first offers each to the graph's nodes: the
        scopes, and the caller and callee of each edge (offering them at every site rather than
        at the edge's first gives the same nodes: an edge's ends are nodes once it exists)."""
        self.externals = tuple(externals.items())
        self.passing = passing if passing.calls or passing.arguments else None
        """The log's parameter calls and arguments by parameter, in order (``Passings.merge``)."""


def digest(log: FileLog) -> Digest:
    """The log's digest, made on first use and kept with the log (a watch replays the same logs
    commit after commit)."""
    found: Digest | None = log.digest  # type: ignore[assignment]
    if found is None:
        found = log.digest = Digest(log)
    return found


def dirty_keys(logs: Iterable[FileLog], passed: Iterable[Key]) -> set[Key]:
    """The keys whose previous edges cannot be taken: those of ``logs`` (the previous logs not
    replayed now and the logs resolved now) and ``passed`` (what passed functions added to)."""
    dirty = set(passed)
    for log in logs:
        dirty.update(digest(log).keys)
    return dirty


def replay_reusing(
    graph: CallGraph, passings: Passings, log: FileLog, prior: Mapping[Key, Edge], dirty: set[Key]
) -> FileLog:
    """``resolutions.replay``, taking ``prior``'s edge for each key not in ``dirty``; the log."""
    found = digest(log)
    if not dirty.isdisjoint(found.keys):
        return replay(graph, passings, log, prior, dirty)  # site by site, the dirty keys' only
    keys = found.keys
    graph.edges.update(zip(keys, map(prior.__getitem__, keys), strict=True))
    nodes, externals = graph.nodes, graph.externals
    for dotted, node in found.nodes:
        nodes.setdefault(dotted, node)
    for caller, sites in found.externals:
        if caller in externals:
            externals[caller] += sites
        else:
            externals[caller] = list(sites)
    if found.passing is not None:
        passings.merge(found.passing)
    graph.stats.update(log.stats)
    return log
