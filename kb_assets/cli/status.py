"""``kb status``: what is indexed, per branch, and how far each branch is ahead of its knowledge."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from kb_assets.cli.session import Session, open_session
from kb_resources.git.repo import GitRepo
from kb_resources.store import reads

SCAN_LIMIT = 100_000


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Flags of ``kb status``."""
    p.add_argument("--json", action="store_true", help="machine-readable output")


def newest_indexed(repo: GitRepo, tip: str, published: Mapping[str, datetime]) -> tuple[str | None, int]:
    """The newest indexed commit on ``tip``'s first-parent line and how many commits ``tip`` is ahead."""
    for ahead, sha in enumerate(repo.first_parent_chain(tip, limit=SCAN_LIMIT)):
        if sha in published:
            return sha, ahead
    return None, len(repo.first_parent_chain(tip, limit=SCAN_LIMIT))


def collect_status(session: Session) -> dict[str, Any]:
    """The status as one JSON-ready object."""
    repo = session.repo
    with session.store.engine.connect() as conn:
        published = reads.published_commits(conn)
        watched = reads.branches(conn)
        branches: dict[str, Any] = {}
        for name, tip in sorted(repo.branches().items()):
            sha, ahead = newest_indexed(repo, tip, published)
            branches[name] = {"tip": tip, "indexed": sha, "ahead": ahead, "watched": name in watched}
        head = repo.resolve("HEAD") if repo.branches() or not repo.is_bare else None
        head_indexed, head_ahead = newest_indexed(repo, head, published) if head else (None, 0)
        counts = reads.artifact_counts(conn, head_indexed) if head_indexed else {}
    return {
        "repository": str(repo.root),
        "store": session.store.url,
        "current_branch": repo.current_branch(),
        "head": head,
        "head_indexed": head_indexed,
        "head_ahead": head_ahead,
        "indexed_commits": len(published),
        "counts": dict(sorted(counts.items())),
        "branches": branches,
    }


def run(args: argparse.Namespace) -> int:
    """Print the status, human-readable or as JSON."""
    status = collect_status(open_session(args, read_only=True))
    if args.json:
        print(json.dumps(status, sort_keys=True))
        return 0
    print(f"repository {status['repository']}  (store {status['store']})")
    print(f"{status['indexed_commits']} indexed commits")
    for name, b in status["branches"].items():
        mark = "*" if name == status["current_branch"] else " "
        indexed = b["indexed"][:12] if b["indexed"] else "nothing indexed"
        watched = ", watched" if b["watched"] else ""
        print(
            f"{mark} {name}: tip {b['tip'][:12]}, newest indexed {indexed}, "
            f"{b['ahead']} commits ahead{watched}"
        )
    if status["head_indexed"]:
        print(
            f"HEAD knowledge at {status['head_indexed'][:12]} ({status['head_ahead']} commits behind HEAD):"
        )
        for kind, n in status["counts"].items():
            print(f"  {kind}: {n}")
    return 0
