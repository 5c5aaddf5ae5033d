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
copy a reproducibility check resolves (same commit) is always resolved afresh.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kb_assets.core.program import Program
from kb_assets.core.symbols.table import SymbolTable

if TYPE_CHECKING:
    from kb_assets.core.callgraph.evaluate import Evaluator
    from kb_assets.core.callgraph.graph import CallGraph
    from kb_assets.core.callgraph.passing import Passings

NODE, EDGE, EXTERNAL, PARAMETER_CALL, ARGUMENT = range(5)
"""The kinds of effect a log records (the first item of each ``Op``)."""

Op = tuple[object, ...]
"""One effect: (NODE, caller), (EDGE, caller, target, line offset, main), (EXTERNAL, caller dotted,
site),
(PARAMETER_CALL, param, caller, offset, main) or (ARGUMENT, evaluated argument)."""

StarNames = dict[str, tuple[tuple[str, int, str | None], ...]]
"""Per module with a star import: its namespace as (name, binding span, star target)."""


class FileLog:
    """What one file's scopes did to the graph, their counts and what they read."""

    __slots__ = ("ops", "reads", "stats")

    def __init__(self) -> None:
        self.ops: list[Op] = []
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
    program: Program, ev: Evaluator, logs: Mapping[str, FileLog], passed: Iterable[tuple[str, str]]
) -> Resolutions:
    """The resolutions of a build that resolved or replayed every file (``logs``), whose passed
    functions added to the edges ``passed``."""
    return Resolutions(
        sha=program.sha,
        files=tuple(sorted(program.files)),
        modules=program.module_map.paths,
        blobs={path: source.blob_id for path, source in program.files.items()},
        stars=star_names(ev.table),
        logs=dict(logs),
        passed=frozenset(passed),
    )


def stale(previous: Resolutions, program: Program, ev: Evaluator) -> set[str] | None:
    """The files whose scopes must be resolved again (the rest replay ``previous``), or None
    when everything must (module docstring)."""
    if previous.sha == program.sha or previous.modules != program.module_map.paths:
        return None
    if previous.files != tuple(sorted(program.files)) or set(previous.logs) != set(ev.scopes.records):
        return None
    changed = [path for path, source in program.files.items() if previous.blobs.get(path) != source.blob_id]
    stars = star_names(ev.table)
    moved = [m for m in stars.keys() | previous.stars.keys() if stars.get(m) != previous.stars.get(m)]
    dirty = ev.reads.of(changed) | ev.reads.of(_paths(program, moved))
    out = set(changed) & previous.logs.keys()
    out.update(path for path, log in previous.logs.items() if log.reads & dirty)
    return out


def callers(logs: Iterable[FileLog]) -> set[str]:
    """The dotted callers whose scopes these logs resolved."""
    return {op[1].dotted for log in logs for op in log.ops if op[0] == NODE}  # type: ignore[attr-defined]


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
    edges_add, nodes, externals = graph.add_edge, graph.nodes, graph.externals
    for op in log.ops:
        kind = op[0]
        if kind == EDGE:
            caller = op[1]
            site = (caller.path, caller.span, op[3])  # type: ignore[attr-defined]
            edges_add(caller, op[2], site, op[4])  # type: ignore[arg-type]
        elif kind == NODE:
            nodes.setdefault(op[1].dotted, op[1])  # type: ignore[arg-type, attr-defined]
        elif kind == EXTERNAL:
            externals.setdefault(op[1], []).append(op[2])  # type: ignore[arg-type]
        elif kind == PARAMETER_CALL:
            passings.parameter_call(op[1], op[2], op[3], op[4])  # type: ignore[arg-type]
        else:
            passings.add(op[1])  # type: ignore[arg-type]
    graph.stats.update(log.stats)
    return log
