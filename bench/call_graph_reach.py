"""How much of the call graph one changed file can affect: the planning figure for re-resolving
only the scopes a commit touches (issue #9's one-file target).

Each file's scopes are resolved on their own, with a fresh evaluator, while the files whose facts
the resolution reads are recorded (a scope's records, name tables and definitions; the modules a
symbol-table lookup reads and the files of the import chain it follows and of the definition it
ends at; first-party modules looked up). A fresh evaluator per file means no memo hides a read.
The read sets under-approximate in two ways: a name looked up and not found through a star
import does not record the star import's source, and a function passed in from another file
(``passed_function``) is not followed. Then, for every file, the share of the commit's call sites
whose file reads it: what would be re-resolved if that file alone changed.

    python bench/call_graph_reach.py REPO [--rev REV] [--file PATH]...

Needs the commit indexed (its facts are read from the store, as ``kb index`` left them).
"""

from __future__ import annotations

import argparse
import collections
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kb_assets.core.callgraph import evaluate, graph, index, members
from kb_assets.core.callgraph.passing import Passings
from kb_assets.core.program import Program
from kb_assets.core.spans import ParseLimits
from kb_assets.core.symbols import namespaces, table
from kb_assets.indexing.load import load_program
from kb_resources.git.repo import GitRepo
from kb_resources.settings import load_settings
from kb_resources.store.engine import open_store


class Reads:
    """The files read while one file's scopes are resolved (None: not recording)."""

    def __init__(self, program: Program) -> None:
        self.paths = program.module_map.paths
        self.current: set[str] | None = None

    def note(self, path: str | None) -> None:
        if self.current is not None and path is not None:
            self.current.add(path)

    def module_path(self, name: str, *_: object) -> str:
        """The file of a module, or a stand-in for a module the commit lacks (adding it matters)."""
        return self.paths.get(name, f"missing:{name}")


def _record(reads: Reads, cls: type, name: str, key: Callable[..., str | None]) -> None:
    """Wrap ``cls.name`` so that each call notes the file ``key(*args)`` names."""
    original = getattr(cls, name)

    def wrapped(self: Any, *args: Any, **kwargs: Any) -> Any:
        reads.note(key(*args))
        return original(self, *args, **kwargs)

    setattr(cls, name, wrapped)


def _instrument(reads: Reads) -> None:
    """Record every read the evaluator makes of another file (see the module docstring)."""
    for method in ("record", "names", "defn"):
        _record(reads, index.Scopes, method, lambda ref: ref.path)
    _record(reads, namespaces.Namespaces, "get", reads.paths.get)
    _record(reads, members.Members, "module", reads.module_path)
    lookup = table.SymbolTable.lookup

    def traced(self: table.SymbolTable, module: str, name: str) -> Any:
        reads.note(reads.module_path(module))
        symbol = lookup(self, module, name)
        if symbol is not None:
            for path, _ in symbol.chain:
                reads.note(path)
            reads.note(symbol.path)
        return symbol

    table.SymbolTable.lookup = traced  # type: ignore[method-assign]


def read_sets(program: Program) -> tuple[dict[str, set[str]], dict[str, int]]:
    """Per file: the files its scopes' resolution read, and its number of call sites."""
    reads = Reads(program)
    _instrument(reads)
    symbols = table.symbol_table(program)
    scopes = index.Scopes(program)
    by_file: dict[str, list[index.ScopeRef]] = collections.defaultdict(list)
    for ref in scopes.refs():
        by_file[ref.path].append(ref)
    found: dict[str, set[str]] = {}
    sites: dict[str, int] = {}
    for path, refs in by_file.items():
        ev = evaluate.Evaluator(scopes, symbols)
        built, passings = graph.CallGraph(evaluator=ev), Passings(ev)
        reads.current = {path}
        count = sum(graph.resolve_scope(built, passings, ref) for ref in refs)
        found[path], sites[path] = reads.current, count
        reads.current = None
    return found, sites


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--rev", default="HEAD")
    parser.add_argument("--file", action="append", default=[], help="also print this file's reach")
    args = parser.parse_args()
    repo = GitRepo.open(args.repo)
    store = open_store(load_settings(), repo.key())
    program = load_program(repo, store.engine, repo.resolve(args.rev), limits=ParseLimits(), workers=1)
    started = time.process_time()
    found, sites = read_sets(program)
    total = sum(sites.values())
    print(f"{len(found)} files, {total} call sites; read sets in {time.process_time() - started:.1f} s CPU")
    readers: dict[str, set[str]] = collections.defaultdict(set)
    for path, read in found.items():
        for target in read:
            readers[target].add(path)

    def reach(path: str) -> tuple[int, float]:
        files = readers.get(path, set()) | {path}
        return len(files), 100 * sum(sites.get(f, 0) for f in files) / max(total, 1)

    for path in args.file:
        files, share = reach(path)
        print(f"{path}: read by {files} files, {share:.1f}% of the call sites")
    for label, paths in (
        ("every file", sorted(found)),
        ("files outside tests", sorted(p for p in found if "tests/" not in p and not p.startswith("test"))),
    ):
        shares = sorted(reach(p)[1] for p in paths)
        if not shares:
            continue
        at = {q: shares[min(len(shares) - 1, int(len(shares) * q))] for q in (0.5, 0.75, 0.9, 0.99)}
        print(
            f"sites to re-resolve when one file changes, {label} ({len(shares)}): median {at[0.5]:.1f}%,"
            f" p75 {at[0.75]:.1f}%, p90 {at[0.9]:.1f}%, p99 {at[0.99]:.1f}%, max {shares[-1]:.1f}%"
        )


if __name__ == "__main__":
    main()
