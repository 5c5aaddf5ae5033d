"""What carrying call edges between commits saves (``kb watch``): CPU of drafting and building
every call edge of a commit against drafting only those the carry from its parent cannot vouch for.

    python bench/call_carry.py REPO --base REV [--rev REV] [--repeat N]

Both commits must be indexed (their facts are read from the store). Prints both timings, how many
edges were drafted and reused, and whether the two ways give the same ids (they must).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

from kb_assets.core.callgraph.graph import call_graph
from kb_assets.core.extractors.base import Draft
from kb_assets.core.extractors.call_carry import EdgeCarry
from kb_assets.core.extractors.calls import CallsExtractor
from kb_assets.core.grounding import artifact_batches
from kb_assets.core.models import Artifact
from kb_assets.core.program import Program
from kb_assets.core.spans import ParseLimits
from kb_assets.indexing.load import load_program
from kb_resources.git.repo import GitRepo
from kb_resources.settings import load_settings
from kb_resources.store.engine import open_store

T = TypeVar("T")


def timed(label: str, work: Callable[[], T]) -> T:
    """Run ``work`` and print its CPU time."""
    started = time.process_time()
    result = work()
    print(f"{label:34s} {time.process_time() - started:6.3f} s CPU", flush=True)
    return result


def built(program: Program, drafts: Iterable[Draft]) -> list[Artifact]:
    """The drafts' artifacts in draft order, built as the writer builds them (``EdgeCarry.remember``
    takes the ids in that order)."""
    version = CallsExtractor.version
    batches = artifact_batches(
        drafts, extractor_id="calls", extractor_version=version, program=program, size=20_000
    )
    return [a for batch in batches for a in batch]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--base", required=True, help="the commit the carry is made on")
    parser.add_argument("--rev", default="HEAD", help="the commit extracted against it")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    repo = GitRepo.open(args.repo)
    engine = open_store(load_settings(), repo.key()).engine

    def program(rev: str) -> Program:
        return load_program(repo, engine, repo.resolve(rev), limits=ParseLimits(), workers=1)

    carry = EdgeCarry()
    base = program(args.base)
    first = carry.resolve(base)
    carry.remember(base, [a.artifact_id for a in built(base, first.extraction.drafts)])
    del first
    new = program(args.rev)
    timed("call graph (both ways)", lambda: call_graph(new))
    for _ in range(args.repeat):
        full = timed("every edge drafted and built", lambda: built(new, CallsExtractor().resolve(new).drafts))
        carried = timed("against the carry", lambda: carry.resolve(new))
        drafts = carried.extraction.drafts
        fresh = timed("  its drafts built", lambda: built(new, drafts))  # noqa: B023 - called at once
        same = {a.artifact_id for a in full} == {a.artifact_id for a in fresh} | set(carried.reused)
        print(f"{len(fresh)} drafted, {len(carried.reused)} reused; same ids: {same}", flush=True)


if __name__ == "__main__":
    main()
