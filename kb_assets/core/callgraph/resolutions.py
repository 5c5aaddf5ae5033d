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
read without any one file being marked: the module map, and the namespaces that star imports fill
from other modules (a module's ``from m import *`` binds whatever ``m`` exposes now: a module
whose star-imported names changed counts as changed). A module that appears or goes is found, or
missed, only through its name, so the files whose facts hold the last component of its name (or
of a package that comes or goes with it) are resolved again with the files that read them
(``looked_up_names``, ``naming``); a file that keeps its path but not its module name changes
every dotted name defined in it, and everything is resolved again. Read sets are bit sets over
the commit's sorted paths, so a replayed log's is rebased onto the new commit's list
(``rebased``). The copy a reproducibility check resolves (same commit) is always resolved afresh,
and so is a big program whose files to resolve again hold most of its call sites
(``STALE_SHARE``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Container, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kb_assets.core.callgraph.parts import SHARE_MIN_SITES
from kb_assets.core.callgraph.reads import Reads
from kb_assets.core.program import Program
from kb_assets.core.symbols.table import SymbolTable

if TYPE_CHECKING:
    from kb_assets.core.callgraph.evaluate import Evaluator
    from kb_assets.core.callgraph.graph import CallGraph, Edge
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

WIDTH = {NODE: 2, EDGE: 7, EXTERNAL: 3, PARAMETER_CALL: 5, ARGUMENT: 2}

STALE_SHARE = 0.5
"""Above this share of the call sites to resolve again, a full build (both cores) is as fast as
resolving them in one process and replaying the rest: everything is resolved."""

StarNames = dict[str, tuple[tuple[str, int, str | None], ...]]
"""Per module with a star import: its namespace as (name, binding span, star target)."""


class FileLog:
    """What one file's scopes did to the graph, their counts and what they read."""

    __slots__ = ("digest", "ops", "reads", "stats")

    def __init__(self) -> None:
        self.ops: list[object] = []
        self.stats: Counter[str] = Counter()
        self.reads = 0
        self.digest: object = None
        """The log's effects grouped for a whole merge (``reuse.digest``), once made; never saved."""

    def __getstate__(self) -> tuple[list[object], Counter[str], int]:
        return self.ops, self.stats, self.reads

    def __setstate__(self, state: tuple[list[object], Counter[str], int]) -> None:
        self.ops, self.stats, self.reads = state
        self.digest = None

    def extend(self, later: FileLog) -> None:
        """Append the log of the file's later scopes (resolved by a forked copy)."""
        self.ops += later.ops
        self.stats.update(later.stats)
        self.reads |= later.reads
        self.digest = None


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
    when everything must (module docstring); ``stars``: ``star_names`` of ``ev``'s table.

    Read sets are over ``previous.files`` (``Reads`` of that list), whatever the new file list."""
    if previous.sha == program.sha:
        return None
    names = looked_up_names(previous, program)
    if names is None:
        return None
    records = ev.scopes.records
    changed = [path for path, source in program.files.items() if previous.blobs.get(path) != source.blob_id]
    gone = [path for path in previous.files if path not in program.files]
    moved = [m for m in stars.keys() | previous.stars.keys() if stars.get(m) != previous.stars.get(m)]
    mentioning = naming(program, names) if names else set()
    # A log that read a file now gone is never replayed (whoever read it found it by its name,
    # so ``naming`` reaches those files too; this says it directly).
    dirty = Reads(previous.files).of((*changed, *gone, *_paths(program, moved), *mentioning))
    out = {path for path in records if path not in previous.logs}
    out.update((set(changed) | mentioning) & records.keys())
    out.update(path for path, log in previous.logs.items() if log.reads & dirty and path in records)
    return out if not _most_sites(ev, out) else None


def looked_up_names(previous: Resolutions, program: Program) -> set[str] | None:
    """The names whose lookups may now find another module, or None when a file kept from
    ``previous`` has another module name or there are too many names (``MAX_LOOKED_UP_NAMES``):
    everything is resolved again.

    Read sets record the files an answer read, not the module names a lookup tested, and a
    lookup of a missing module reads no file. A module that appears or goes (or a file that starts
    or stops being parsed: its namespace was not there to read) can only be found through its
    own name: an import (``import a.b``, ``from a import b``, ``from .b import x``), an attribute
    of its package (``a.b``), a string naming it. The same holds for a package or namespace
    package whose existence changes with it, down to a new top-level name. So every file whose
    facts hold one of those last components is resolved again (``naming``), with the files that
    read it."""
    old, new = previous.modules, program.module_map.paths
    if old == new and previous.files == tuple(sorted(program.files)):
        return set()  # the usual commit: 8 ms of Django's build otherwise, on every one
    old_at = {path: module for module, path in old.items()}
    new_at = {path: module for module, path in new.items()}
    kept = set(previous.files) & set(program.files)
    if any(old_at.get(path) != new_at.get(path) for path in kept):
        return None  # a kept file's definitions have other dotted names
    if any(new.get(module, path) != path for module, path in old.items()):
        return None  # a module now read from another file
    entering = set(program.files) - set(previous.files)
    leaving = set(previous.files) - set(program.files)
    touched = old.keys() ^ new.keys()
    touched.update(module for module, path in new.items() if path in entering)
    touched.update(module for module, path in old.items() if path in leaving)
    old_prefixes, new_prefixes = _prefixes(old), _prefixes(new)
    found: set[str] = set()
    for name in touched:
        parts = name.split(".")
        found.add(parts[-1])
        for i in range(1, len(parts)):
            prefix = ".".join(parts[:i])
            if (prefix in old_prefixes) != (prefix in new_prefixes):
                found.add(parts[i - 1])
    return found if len(found) <= MAX_LOOKED_UP_NAMES else None


MAX_LOOKED_UP_NAMES = 64
"""Above this many names (a directory moved, a package split) everything is resolved again:
``naming`` searches every file's facts for each name, and such a change reaches most files."""


def _prefixes(modules: Mapping[str, str]) -> set[str]:
    """Every module name and every dotted prefix of one (its packages, namespace or not)."""
    out: set[str] = set()
    for module in modules:
        parts = module.split(".")
        out.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return out


def naming(program: Program, names: set[str]) -> set[str]:
    """The files whose facts hold one of ``names`` as a word (``\\w+``) of a key or a string, at
    any depth.

    A file's ``repr`` (made in C; ``repr`` escapes no word character, so a name in a string is in
    its ``repr``) rules out most files at once; only those whose text holds a name somewhere, even
    inside a longer word, have their strings split into words. On Django, for ``dates``: 26
    files in 0.33-0.41 s (a ``repr`` of 23 MiB of facts), where walking every value in Python
    took 0.7 s and a substring alone matched 518 files (``updates``, ``candidates``)."""
    found: set[str] = set()
    for path, source in program.files.items():
        text = repr(source.facts)
        if any(name in text for name in names) and _names(source.facts, names):
            found.add(path)
    return found


_WORDS = re.compile(r"\w+")


def _names(value: object, names: set[str]) -> bool:
    """Whether a key or string of ``value``, at any depth, has one of ``names`` as a word."""
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is str:
            if any(name in item for name in names) and not names.isdisjoint(_WORDS.findall(item)):
                return True
        elif type(item) is dict:
            stack.extend(item.keys())
            stack.extend(item.values())
        elif type(item) is list or type(item) is tuple:
            stack.extend(item)
    return False


def rebased(previous: Resolutions, files: tuple[str, ...]) -> Callable[[FileLog], FileLog] | None:
    """A function giving a replayed log its read set over ``files`` (a commit's sorted paths)
    instead of ``previous.files``, or None when they are the same list. A bit of a file that is
    gone is dropped: a log that read it is resolved again, never replayed."""
    if previous.files == files:
        return None
    bit = Reads(files).bit
    moves = [bit.get(path, 0) for path in previous.files]

    def rebase(log: FileLog) -> FileLog:
        bits, out = log.reads, 0
        while bits:
            low = bits & -bits
            out |= moves[low.bit_length() - 1]
            bits ^= low
        copy = FileLog()
        copy.ops, copy.stats, copy.reads, copy.digest = log.ops, log.stats, out, log.digest
        return copy

    return rebase


def _most_sites(ev: Evaluator, paths: set[str]) -> bool:
    """Whether files to resolve again hold more than ``STALE_SHARE`` of a program's call sites,
    on a program big enough for a forked copy to share a full build (``parts``). The files'
    own sites are counted first: at most ``STALE_SHARE`` of ``SHARE_MIN_SITES`` (a commit's few
    files) cannot be more than that share of such a program, and every file's sites are not
    counted (~30 ms of each warm Django commit)."""
    records = ev.scopes.records

    def sites(path: str) -> int:
        return sum(len(rec.get("calls", ())) for rec in records[path])

    again = sum(sites(path) for path in paths)
    if again <= STALE_SHARE * SHARE_MIN_SITES:
        return False
    total = sum(sites(path) for path in records)
    return total >= SHARE_MIN_SITES and again > STALE_SHARE * total


def callers(logs: Iterable[FileLog]) -> set[str]:
    """The dotted callers whose scopes these logs resolved."""
    found: set[str] = set()
    for log in logs:
        ops, i = log.ops, 0
        while i < len(ops):
            kind = ops[i]
            if kind == NODE:
                found.add(ops[i + 1].dotted)  # type: ignore[attr-defined]
            i += WIDTH[kind]  # type: ignore[index]
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


def replay(
    graph: CallGraph,
    passings: Passings,
    log: FileLog,
    prior: Mapping[tuple[str, str], Edge] | None = None,
    dirty: Container[tuple[str, str]] = (),
) -> FileLog:
    """Apply a file's recorded effects to ``graph`` and ``passings`` as resolving it did; the log.
    With ``prior`` (the previous commit's edges), an edge whose key is not ``dirty`` is taken
    from it instead of having its sites added (``reuse``)."""
    add_edge, nodes, externals, edges = graph.add_edge, graph.nodes, graph.externals, graph.edges
    ops, i, end = log.ops, 0, len(log.ops)
    while i < end:
        kind = ops[i]
        if kind == EDGE:
            caller = ops[i + 1]
            if prior is not None:
                callee = ops[i + 2]
                key = (caller.dotted, callee.dotted)  # type: ignore[attr-defined]
                if key not in dirty:
                    if key not in edges:
                        edges[key] = prior[key]
                        nodes.setdefault(key[0], caller)  # type: ignore[arg-type]
                        nodes.setdefault(key[1], callee)  # type: ignore[arg-type]
                    i += 7
                    continue
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
