"""What each file's resolution did and read, kept so that the next commit's call graph resolves
only the files a change can reach and replays the rest.

A file's ``FileLog`` holds, in order, every effect its scopes had on the graph (a node, an edge
with its site, an external call, a parameter call, an argument passed) and its counts, plus its
read set (``reads``): every file whose facts any answer it used was computed from. Replaying the
logs of every file in path order, then matching passed functions (``Passings.resolve``, always
whole), is resolving every scope in one pass: same edges in the same order, same sites, spans,
forms, externals, nodes and counts.

A file's log still holds on the next commit when nothing it read changed (``stale``): its own
blob, and every file in its read set. Two things are compared besides the blobs, because they are
read without any one file being marked: the set of files and the module map (a file added,
removed or renamed changes what names resolve to anywhere: everything is resolved again), and
the namespaces that star imports fill from other modules (a module's ``from m import *`` binds
whatever ``m`` exposes now: a module whose star-imported names changed counts as changed). The
copy a reproducibility check resolves (same commit) is always resolved afresh, and so is a big
program whose files to resolve again hold most of its call sites (``STALE_SHARE``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kb_assets.core.callgraph.parts import SHARE_MIN_SITES
from kb_assets.core.program import Program
from kb_assets.core.symbols.table import SymbolTable

if TYPE_CHECKING:
    from kb_assets.core.callgraph.evaluate import Evaluator
    from kb_assets.core.callgraph.graph import CallGraph
    from kb_assets.core.callgraph.passing import Passings

NODE, EDGE, EXTERNAL, PARAMETER_CALL, ARGUMENT = range(5)
"""The kinds of effect a log records. A log is one flat list, each effect its kind followed by
its fields (no tuple per effect: Django's logs hold ~260k of them):

* NODE, caller
* EDGE, caller, callee, forms, via, line offset, main
* EXTERNAL, caller dotted, ExternalSite
* PARAMETER_CALL, param, caller, line offset, main
* ARGUMENT, evaluated argument (``passing.Argument``)
"""

_WIDTH = {NODE: 2, EDGE: 7, EXTERNAL: 3, PARAMETER_CALL: 5, ARGUMENT: 2}

STALE_SHARE = 0.5
"""Above this share of the call sites to resolve again, a full build (both cores) is as fast as
resolving them in one process and replaying the rest: everything is resolved."""

StarNames = dict[str, tuple[tuple[str, int, str | None], ...]]
"""Per module with a star import: its namespace as (name, binding span, star target)."""


class FileLog:
    """What one file's scopes did to the graph, their counts and what they read."""

    __slots__ = ("ops", "reads", "stats")

    def __init__(self) -> None:
        self.ops: list[object] = []
        self.stats: Counter[str] = Counter()
        self.reads = 0

    def extend(self, later: FileLog) -> None:
        """Append the log of the file's later scopes (resolved by a forked copy)."""
        self.ops += later.ops
        self.stats.update(later.stats)
        self.reads |= later.reads


@dataclass(frozen=True, slots=True)
class Resolutions:
    """One commit's resolutions: what the next commit's build needs to reuse them."""

    sha: str
    files: tuple[str, ...]
    modules: Mapping[str, str]
    blobs: Mapping[str, str]
    stars: StarNames
    logs: Mapping[str, FileLog]
    passed: frozenset[tuple[str, str]]
    """The edges passed functions added to (``CallGraph.changed``)."""


def record(
    program: Program, stars: StarNames, logs: Mapping[str, FileLog], passed: Iterable[tuple[str, str]]
) -> Resolutions:
    """The resolutions of a build that resolved or replayed every file (``logs``), over a symbol
    table whose star-imported names are ``stars`` (``star_names``), whose passed functions added
    to the edges ``passed``."""
    return Resolutions(
        sha=program.sha,
        files=tuple(sorted(program.files)),
        modules=program.module_map.paths,
        blobs={path: source.blob_id for path, source in program.files.items()},
        stars=stars,
        logs=dict(logs),
        passed=frozenset(passed),
    )


def stale(previous: Resolutions, program: Program, ev: Evaluator, stars: StarNames) -> set[str] | None:
    """The files whose scopes must be resolved again (the rest replay ``previous``), or None
    when everything must (module docstring); ``stars``: ``star_names`` of ``ev``'s table."""
    if previous.sha == program.sha or previous.modules != program.module_map.paths:
        return None
    if previous.files != tuple(sorted(program.files)) or set(previous.logs) != set(ev.scopes.records):
        return None
    changed = [path for path, source in program.files.items() if previous.blobs.get(path) != source.blob_id]
    moved = [m for m in stars.keys() | previous.stars.keys() if stars.get(m) != previous.stars.get(m)]
    dirty = ev.reads.of(changed) | ev.reads.of(_paths(program, moved))
    out = set(changed) & previous.logs.keys()
    out.update(path for path, log in previous.logs.items() if log.reads & dirty)
    return out if not _most_sites(ev, out) else None


def _most_sites(ev: Evaluator, paths: set[str]) -> bool:
    """Whether files to resolve again hold more than ``STALE_SHARE`` of a program's call sites,
    on a program big enough for a forked copy to share a full build (``parts``)."""
    records = ev.scopes.records
    sites = {path: sum(len(rec.get("calls", ())) for rec in recs) for path, recs in records.items()}
    total = sum(sites.values())
    return total >= SHARE_MIN_SITES and sum(sites[path] for path in paths) > STALE_SHARE * total


def callers(logs: Iterable[FileLog]) -> set[str]:
    """The dotted callers whose scopes these logs resolved."""
    found: set[str] = set()
    for log in logs:
        ops, i = log.ops, 0
        while i < len(ops):
            kind = ops[i]
            if kind == NODE:
                found.add(ops[i + 1].dotted)  # type: ignore[attr-defined]
            i += _WIDTH[kind]  # type: ignore[index]
    return found


def star_names(table: SymbolTable) -> StarNames:
    """The namespaces of the modules that star-import (the only ones another module's change can
    change without their own file changing)."""
    out: StarNames = {}
    for module, facts in table.facts.items():
        if any(b.kind == "star" for b in facts.bindings):
            namespace = table.namespaces.get(module)
            out[module] = tuple(
                (name, entry.binding.span, entry.star_target) for name, entry in sorted(namespace.items())
            )
    return out


def _paths(program: Program, modules: Iterable[str]) -> list[str]:
    return [path for path in (program.module_map.paths.get(m) for m in modules) if path is not None]


def replay(graph: CallGraph, passings: Passings, log: FileLog) -> FileLog:
    """Apply a file's recorded effects to ``graph`` and ``passings`` as resolving it did; the log."""
    add_edge, nodes, externals = graph.add_edge, graph.nodes, graph.externals
    ops, i, end = log.ops, 0, len(log.ops)
    while i < end:
        kind = ops[i]
        if kind == EDGE:
            caller = ops[i + 1]
            target = (ops[i + 2], ops[i + 3], 0, ops[i + 4])
            site = (caller.path, caller.span, ops[i + 5])  # type: ignore[attr-defined]
            add_edge(caller, target, site, ops[i + 6])  # type: ignore[arg-type]
            i += 7
        elif kind == NODE:
            caller = ops[i + 1]
            nodes.setdefault(caller.dotted, caller)  # type: ignore[attr-defined, arg-type]
            i += 2
        elif kind == EXTERNAL:
            externals.setdefault(ops[i + 1], []).append(ops[i + 2])  # type: ignore[arg-type]
            i += 3
        elif kind == PARAMETER_CALL:
            passings.parameter_call(ops[i + 1], ops[i + 2], ops[i + 3], ops[i + 4])  # type: ignore[arg-type]
            i += 5
        else:
            passings.add(ops[i + 1])  # type: ignore[arg-type]
            i += 2
    graph.stats.update(log.stats)
    return log
