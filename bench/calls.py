"""Call-graph and process-path cost on one source tree: collect time, resolve time, peak memory.

    python bench/calls.py ROOT [--profile OUT] [--tracemalloc]

Builds a ``Program`` straight from the files (as the extractor tests do: every extractor's and
collector's facts, round-tripped through the cache encoding), then times the ``calls`` collect
alone over every file, and ``call_edges`` / ``process_paths`` resolution (CPU seconds). Peak RSS is
read from the kernel after each phase. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import resource
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kb_assets.core.callgraph.graph import call_graph
from kb_assets.core.extractors.calls import CallsExtractor
from kb_assets.core.extractors.process_paths import ProcessPathsExtractor
from kb_assets.core.spans import ParseLimits, parse_source
from tests.programs import program_from_files


def peak_mib() -> float:
    """Peak resident set size of this process so far."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("root", type=Path)
    parser.add_argument("--profile", type=Path)
    parser.add_argument("--tracemalloc", action="store_true")
    args = parser.parse_args()
    root: Path = args.root
    files = {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.py")) if ".git" not in p.parts
    }
    t = time.process_time()
    program = program_from_files(files)
    print(
        f"program: {len(program.files)} files, {time.process_time() - t:.2f} s CPU, peak {peak_mib():.0f} MiB"
    )
    collector = CallsExtractor()
    collect_cpu = 0.0
    for data in files.values():
        parsed, _ = parse_source(data, ParseLimits())
        if parsed is None:
            continue
        t = time.process_time()
        collector.collect(parsed)
        collect_cpu += time.process_time() - t
    print(f"calls collect: {collect_cpu:.2f} s CPU over {len(files)} files")
    before = peak_mib()
    if args.tracemalloc:
        tracemalloc.start()
    profiler = cProfile.Profile() if args.profile else None
    t = time.process_time()
    if profiler is not None:
        profiler.enable()
    extraction = collector.resolve(program)
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(str(args.profile))
    cpu = time.process_time() - t
    graph = call_graph(program)
    forms = collections.Counter(f for d in extraction.drafts for f in d.payload["forms"])
    print(f"call_edges resolve: {cpu:.2f} s CPU, {len(extraction.drafts)} edges, {len(extraction.gaps)} gaps")
    print(f"  stats {dict(graph.stats)}")
    print(f"  forms {dict(sorted(forms.items()))}")
    if args.tracemalloc:
        current, peak = tracemalloc.get_traced_memory()
        print(f"  tracemalloc: current {current / 2**20:.0f} MiB, peak {peak / 2**20:.0f} MiB")
    print(f"  peak RSS {before:.0f} -> {peak_mib():.0f} MiB")
    t = time.process_time()
    paths = ProcessPathsExtractor().resolve(program)
    print(
        f"process_paths resolve: {time.process_time() - t:.2f} s CPU, {len(paths.drafts)} paths, "
        f"{len(paths.gaps)} gaps, peak RSS {peak_mib():.0f} MiB"
    )


if __name__ == "__main__":
    main()
