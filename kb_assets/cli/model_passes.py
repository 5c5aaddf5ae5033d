"""``kb describe`` and ``kb mine``: the model-backed passes, run through Dagster like ``kb index``.

Both work on an indexed commit (default: the newest indexed commit of HEAD's branch), check first
that the configured provider can be used at all (SDK installed, key set: else one line, exit 2),
then materialize their asset in its own job, print one summary line from its metadata and one line
per failed ``claims_backed`` check (exit 1).
"""

from __future__ import annotations

import argparse
from typing import Any

from kb_assets.cli.index import report_checks
from kb_assets.cli.runner import run_model_pass
from kb_assets.cli.session import indexed_sha, open_session
from kb_assets.core.describe.targets import TARGET_KINDS
from kb_resources.llm.factory import llm_config, open_provider


def add_describe_arguments(p: argparse.ArgumentParser) -> None:
    """Flags of ``kb describe``."""
    p.add_argument(
        "--sha", default=None, metavar="REV", help="indexed commit (default: newest indexed on HEAD's branch)"
    )
    p.add_argument(
        "--kind",
        action="append",
        choices=TARGET_KINDS,
        default=None,
        help="describe only targets of this kind (repeatable; default: all)",
    )
    p.add_argument("--limit", type=int, default=-1, metavar="N", help="at most N model calls this run")
    p.add_argument("--force", action="store_true", help="ask the model again even for described targets")


def add_mine_arguments(p: argparse.ArgumentParser) -> None:
    """Flags of ``kb mine``."""
    p.add_argument(
        "--sha",
        default=None,
        metavar="REV",
        help="indexed commit to mine back from (default: newest)",
    )
    p.add_argument(
        "--max-commits", type=int, default=50, metavar="N", help="walk at most N first-parent commits (50)"
    )
    p.add_argument("--force", action="store_true", help="ask the model again even for mined commits")
    p.add_argument(
        "--prs",
        action="store_true",
        help="add the GitHub PR title/body of squash-merged commits as context (network; GITHUB_TOKEN)",
    )


def run_describe(args: argparse.Namespace) -> int:
    """Describe the commit's targets; print the summary line."""
    config: dict[str, Any] = {"kinds": sorted(set(args.kind or [])), "limit": args.limit, "force": args.force}
    return _run(args, "describe_commit", config)


def run_mine(args: argparse.Namespace) -> int:
    """Mine decisions from the history behind the commit; print the summary line."""
    config: dict[str, Any] = {"max_commits": args.max_commits, "force": args.force, "prs": args.prs}
    return _run(args, "mine_history", config)


def _run(args: argparse.Namespace, job: str, config: dict[str, Any]) -> int:
    session = open_session(args)
    open_provider(llm_config(session.settings))  # no SDK or no key: one line, exit 2, before any run
    sha = indexed_sha(session, args.sha)
    metadata, checks = run_model_pass(session, job, sha, config)
    print(metadata.get("summary_line") or f"{job} {sha[:12]}: done")
    report_checks(checks)
    return 1 if checks.failures else 0
