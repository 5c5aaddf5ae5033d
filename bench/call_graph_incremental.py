"""The call graph of each commit built from the last one's resolutions, against a full build:
how many files were resolved again, how long each build took, and whether the two graphs agree
(every field of every edge, externals, nodes and counts).

    python bench/call_graph_incremental.py REPO --rev BASE --rev NEXT [--rev NEXT2 ...]

Each revision's program is loaded from the store's facts (parsing what is missing), so run it on
a repository ``kb index`` has seen. The first revision is only built (in full, keeping its
resolutions); each later one is built from the one before, then in full, and compared.
"""

from __future__ import annotations

import argparse
import resource
import time
from typing import Any

from kb_assets.core.callgraph import graph
from kb_assets.core.callgraph.graph import CallGraph
from kb_assets.core.callgraph.resolutions import Resolutions
from kb_assets.core.collector import tune_collector
from kb_assets.core.spans import ParseLimits
from kb_assets.core.symbols.table import symbol_table
from kb_assets.indexing.load import load_program
from kb_resources.git.repo import GitRepo
from kb_resources.settings import load_settings
from kb_resources.store.engine import open_store


def shape(built: CallGraph) -> Any:
    """Every field of the graph that anything reads, in order."""
    edges = [
        (key, e.caller, e.callee, e.callee_spans, e.forms, e.offsets, e.others, e.main, sorted(e.via))
        for key, e in built.edges.items()
    ]
    return edges, list(built.externals.items()), list(built.nodes.items()), sorted(built.stats.items())


def timed(previous: Resolutions | None, program: Any) -> tuple[CallGraph, float]:
    start = time.perf_counter()
    with graph.paused_gc():
        built = graph._build(program, previous=previous, keep=True)
    return built, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo")
    parser.add_argument("--rev", action="append", required=True)
    args = parser.parse_args()
    tune_collector()
    repo = GitRepo.open(args.repo)
    store = open_store(load_settings(), repo.key(), read_only=True, migrate=False)
    previous: Resolutions | None = None
    for rev in args.rev:
        sha = repo.resolve(rev)
        program = load_program(repo, store.engine, sha, limits=ParseLimits(), workers=2)
        symbol_table(program)
        built, took = timed(previous, program)
        line = f"{rev[:12]}: {len(program.files)} files"
        if previous is not None:
            full, full_took = timed(None, program)
            same = shape(built) == shape(full)
            line += (
                f", resolved again {built.resolved} files in {took:.2f} s"
                f" (full build {full_took:.2f} s); graphs {'agree' if same else 'DIFFER'}"
            )
        else:
            line += f", full build {took:.2f} s"
        print(
            line, f"(peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MiB)", flush=True
        )
        previous, built.resolutions = built.resolutions, None
        built.close()


if __name__ == "__main__":
    main()
