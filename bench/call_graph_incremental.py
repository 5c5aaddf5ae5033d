"""The call graph of each commit built from the last one's resolutions, against a full build:
how many files were resolved again, how long each build took, and whether the two graphs agree
(every field of every edge, externals, nodes and counts).

    python bench/call_graph_incremental.py REPO --rev BASE [--rev NEXT ...] [--edits N --seed S]

Each revision's program is loaded from the store's facts (parsing what is missing), so run it on
a repository ``kb index`` has seen. The first revision is only built (in full, keeping its
resolutions); each later one is built from the one before, then in full, and compared. With
``--edits N``, N synthetic edits of randomly chosen files follow, each on top of the last (a
definition renamed, a ``return`` made ``return None``, a base class dropped, an import line
deleted, lines shifted, a function appended), the edited file parsed in memory: a check of the
read sets on real code, beyond what the tests' edits reach.
"""

from __future__ import annotations

import argparse
import random
import re
import resource
import time
from dataclasses import replace
from typing import Any

from kb_assets.core.blobs import analyze_blob, decode_facts, encode_facts
from kb_assets.core.callgraph import graph
from kb_assets.core.callgraph.graph import CallGraph
from kb_assets.core.callgraph.resolutions import Resolutions
from kb_assets.core.collector import paused_gc, tune_collector
from kb_assets.core.extractors.registry import COLLECTORS, EXTRACTORS
from kb_assets.core.program import Program
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


def timed(
    previous: Resolutions | None, program: Any, prior: Any = None
) -> tuple[CallGraph, Resolutions | None, float]:
    start = time.perf_counter()
    with paused_gc():
        built, kept = graph._build(program, previous=previous, keep=True, prior=prior)
    return built, kept, time.perf_counter() - start


def reusing(
    previous: Resolutions, prior: Any, program: Any, full: CallGraph
) -> tuple[CallGraph, Resolutions | None, str, bool]:
    """The build a watch makes (the previous build's edges taken where no change reaches them,
    ``callgraph.reuse``), a note of its time, and whether it is ``full``'s graph."""
    built, kept, took = timed(previous, program, prior)
    same = shape(built) == shape(full)
    return built, kept, f"; as a watch (edges taken) {took:.2f} s, {'agree' if same else 'DIFFER'}", same


EDITS: tuple[tuple[str, str, str], ...] = (
    ("definition renamed", r"^(\s*)def (\w+)\(", r"\1def \2_kb("),
    ("return made None", r"^(\s+)return \S.*$", r"\1return None"),
    ("base class dropped", r"^(\s*)class (\w+)\([^)]*\):", r"\1class \2:"),
    ("import line deleted", r"^(from \S+ import [^(\n]+|import \S+)$", r"pass"),
)
"""(what, pattern, replacement): each applied to one random match in the file."""


def edited(program: Program, rng: random.Random, n: int) -> tuple[Program, str]:
    """``program`` with one file edited (and parsed again), and what was done."""
    paths = sorted(
        p for p, f in program.files.items() if f.module is not None and not p.endswith("__init__.py")
    )
    while True:
        path = rng.choice(paths)
        with open(path_of[path], "rb") as handle:  # the working tree's text of the file
            text = handle.read().decode("utf-8", "replace")
        what = rng.choice([*(e[0] for e in EDITS), "lines shifted", "function appended"])
        if what == "lines shifted":
            new = "# kb bench\n\n" + text
        elif what == "function appended":
            new = text + f"\n\ndef kb_bench_edit_{n}(value):\n    return value\n"
        else:
            pattern, replacement = next((p, r) for w, p, r in EDITS if w == what)
            matches = list(re.finditer(pattern, text, flags=re.MULTILINE))
            if not matches:
                continue
            m = rng.choice(matches)
            new = text[: m.start()] + m.expand(replacement) + text[m.end() :]
        data = new.encode("utf-8")
        blob = f"kb-bench-edit-{n}"
        parsed = analyze_blob(blob, data, tuple(EXTRACTORS), ParseLimits(), tuple(COLLECTORS))
        if not parsed.spans:
            continue
        source = program.files[path]
        files = dict(program.files)
        files[path] = replace(
            source, blob_id=blob, spans=parsed.spans, facts=decode_facts(encode_facts(parsed.facts))
        )
        with open(path_of[path], "w", encoding="utf-8") as handle:
            handle.write(new)
        return replace(program, sha=f"{n:040x}", files=files), f"{what} in {path}"


path_of: dict[str, str] = {}
"""Repository path -> a scratch copy of the file, edited in place edit after edit."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo")
    parser.add_argument("--rev", action="append", required=True)
    parser.add_argument("--edits", type=int, default=0)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    tune_collector()
    repo = GitRepo.open(args.repo)
    store = open_store(load_settings(), repo.key(), read_only=True, migrate=False)
    previous: Resolutions | None = None
    prior: Any = None
    for rev in args.rev:
        sha = repo.resolve(rev)
        program = load_program(repo, store.engine, sha, limits=ParseLimits(), workers=2)
        symbol_table(program)
        built, kept, took = timed(previous, program)
        line = f"{rev[:12]}: {len(program.files)} files"
        if previous is not None:
            full, _, full_took = timed(None, program)
            same = shape(built) == shape(full)
            line += (
                f", resolved again {built.resolved} files in {took:.2f} s"
                f" (full build {full_took:.2f} s); graphs {'agree' if same else 'DIFFER'}"
            )
            built.close()
            built, kept, note, _ = reusing(previous, prior, program, full)
            line += note
            full.close()
        else:
            line += f", full build {took:.2f} s"
        print(
            line, f"(peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MiB)", flush=True
        )
        previous, prior = kept, built.edges
        built.close()
    if args.edits:
        random_edits(repo, program, previous, prior, count=args.edits, seed=args.seed)


def random_edits(
    repo: GitRepo, program: Program, previous: Resolutions | None, prior: Any, *, count: int, seed: int
) -> None:
    """``count`` synthetic edits on top of ``program`` (module docstring), each checked."""
    import tempfile
    from pathlib import Path

    scratch = Path(tempfile.mkdtemp(prefix="kb-bench-edits-"))
    for path in program.files:
        target = scratch / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(repo.read_blob(program.files[path].blob_id))
        path_of[path] = str(target)
    rng = random.Random(seed)
    differ = 0
    for n in range(1, count + 1):
        program, what = edited(program, rng, n)
        built, kept, took = timed(previous, program)
        full, _, full_took = timed(None, program)
        same = shape(built) == shape(full)
        resolved = "all" if built.resolved is None else built.resolved
        note = ""
        if previous is not None:
            built.close()
            built, kept, note, agrees = reusing(previous, prior, program, full)
            same = same and agrees
        differ += not same
        print(
            f"edit {n}: {what}: resolved again {resolved} files in {took:.2f} s (full {full_took:.2f} s);"
            f" graphs {'agree' if same else 'DIFFER'}{note}",
            flush=True,
        )
        previous, prior = kept, built.edges
        built.close()
        full.close()
    print(f"{count} edits, {differ} with graphs that differ")


if __name__ == "__main__":
    main()
