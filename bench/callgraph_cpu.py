"""CPU and memory of ``call_edges`` and ``process_paths`` resolution on one commit, plus a digest of
their output, so an optimisation can be checked to change nothing.

    python bench/callgraph_cpu.py REPO [--rev REV] [--cache DIR] [--repeat N] [--profile OUT] [--tracemalloc]

The commit's ``.py`` blobs are read from git (pygit2, no checkout, no store) and turned into a
``Program`` the way extractor tests do (every collector, facts round-tripped through the cache
encoding; ``.kb/sinks.yaml`` read as the loader does). Building that program parses every file, so
``--cache DIR`` pickles it per (commit, parser version) and later runs start from the pickle.

Then, in pipeline order, ``calls`` and ``process_paths`` are resolved (CPU seconds with
``time.process_time``; the machine is shared, wall time means little) and their artifacts built as
``run_extractor`` builds them. The digest covers the sorted artifact ids (which hash payload and
grounding) and the sorted gaps: equal digests before and after a change mean identical output.
``--tracemalloc`` adds the Python heap peak of the calls resolution (and slows it ~2x).
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import pickle
import resource
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kb_assets.core.callgraph import graph as graph_module
from kb_assets.core.callgraph.graph import call_graph
from kb_assets.core.extractors.base import Extraction, Extractor
from kb_assets.core.extractors.registry import extractor, parser_version
from kb_assets.core.grounding import build_artifacts
from kb_assets.core.program import Program
from kb_assets.indexing.load import load_config
from kb_resources.git.repo import GitRepo
from tests.programs import program_from_files


def peak_mib() -> float:
    """Peak resident set size of this process so far."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def load(repo: GitRepo, sha: str, cache: Path | None) -> Program:
    """The commit as a ``Program`` (from the pickle cache when it holds this commit)."""
    cached = cache / f"program-{sha[:12]}-{parser_version()[:12]}.pickle" if cache else None
    if cached is not None and cached.exists():
        with cached.open("rb") as f:
            program: Program = pickle.load(f)  # our own cache file
        return program
    files = {entry.path: repo.read_blob(entry.blob_id) for entry in repo.python_files(sha)}
    built = program_from_files(files, sha=sha)
    program = Program(sha=sha, files=built.files, module_map=built.module_map, config=load_config(repo, sha))
    if cached is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        with cached.open("wb") as f:
            pickle.dump(program, f, protocol=pickle.HIGHEST_PROTOCOL)
    return program


def digest(found: Extractor, program: Program, extraction: Extraction) -> tuple[str, int]:
    """Digest of the sorted artifact ids and the gaps (and how many artifacts there are)."""
    artifacts = build_artifacts(
        extraction.drafts,
        extractor_id=found.extractor_id,
        extractor_version=found.version,
        program=program,
    )
    h = hashlib.sha256()
    for artifact_id in sorted(a.artifact_id for a in artifacts):
        h.update(artifact_id.encode("ascii") + b"\n")
    for gap in extraction.gaps:  # in the order the extractor gives them: stricter than sorted
        h.update(repr(gap).encode("utf-8") + b"\n")
    return h.hexdigest()[:16], len(artifacts)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("repo", type=Path)
    parser.add_argument("--rev", default="HEAD")
    parser.add_argument("--cache", type=Path)
    parser.add_argument("--profile", type=Path, help="cProfile both resolutions into this file")
    parser.add_argument("--tracemalloc", action="store_true")
    parser.add_argument("--repeat", type=int, default=0, help="resolve calls N more times, print the min")
    args = parser.parse_args()
    repo = GitRepo.open(args.repo)
    sha = repo.resolve(args.rev)
    t = time.process_time()
    program = load(repo, sha, args.cache)
    print(f"program {sha[:12]}: {len(program.files)} files, {time.process_time() - t:.2f} s CPU to load")
    base = peak_mib()
    profiler = cProfile.Profile() if args.profile else None
    for name in ("calls", "process_paths"):
        found = extractor(name)
        if args.tracemalloc and name == "calls":
            tracemalloc.start()
        if profiler is not None:
            profiler.enable()
        t = time.process_time()
        extraction = found.resolve(program)
        cpu = time.process_time() - t
        if profiler is not None:
            profiler.disable()
        heap = ""
        if tracemalloc.is_tracing():
            current, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            heap = f", heap now {current / 2**20:.0f} MiB, peak {peak / 2**20:.0f} MiB"
        print(f"{name} resolve: {cpu:.2f} s CPU{heap}, peak RSS {base:.0f} -> {peak_mib():.0f} MiB")
        again = []
        for _ in range(args.repeat if name == "calls" else 0):
            graph_module._graphs.forget()  # rebuild the graph (the symbol table stays memoized)
            t = time.process_time()
            found.resolve(program)
            again.append(time.process_time() - t)
        if again:
            print(f"  again, symbol table built: min {min(again):.2f} s CPU of {len(again)}")
        value, count = digest(found, program, extraction)
        print(f"  {count} artifacts, {len(extraction.gaps)} gaps, digest {value}")
    print(f"  call graph: {len(call_graph(program).edges)} edges")
    if profiler is not None:
        profiler.dump_stats(str(args.profile))


if __name__ == "__main__":
    main()
