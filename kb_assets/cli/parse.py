"""``kb parse``: parse a commit's blobs (or one shard of them) into the store's blob cache ahead of
``kb index``, so that the parse of a large repository can be spread over processes or machines
sharing one store (``kb_assets.indexing.preparse``). It runs no Dagster job: it fills a cache."""

from __future__ import annotations

import argparse
import sys

from kb_assets.cli.progress import drawn_progress
from kb_assets.cli.session import open_session
from kb_assets.indexing.preparse import Shard, pre_parse


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Flags of ``kb parse``."""
    p.add_argument("--sha", default="HEAD", metavar="REV", help="commit whose blobs to parse (default HEAD)")
    p.add_argument(
        "--shard",
        default="0/1",
        metavar="K/N",
        help="parse only shard K of N (counted from 0; blobs are split by id), e.g. 0/4 .. 3/4",
    )


def run(args: argparse.Namespace) -> int:
    """Parse the shard's blobs not cached yet and print one line of what was done."""
    shard = Shard.parse(args.shard)  # bad input is refused before the store is opened
    session = open_session(args)
    sha = session.repo.resolve(args.sha)
    with drawn_progress(sys.stderr):
        done = pre_parse(
            session.repo,
            session.store.engine,
            sha,
            shard,
            limits=session.limits(),
            workers=session.settings.workers,
        )
    print(
        f"parsed {sha[:12]} shard {shard}: {done.in_shard} of {done.blobs} blobs "
        f"({done.parsed} parsed, {done.in_shard - done.parsed} already cached)"
    )
    return 0
