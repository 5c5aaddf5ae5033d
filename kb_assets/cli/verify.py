"""``kb verify``: compare an indexed commit with the independent oracles (grimp, griffe)."""

from __future__ import annotations

import argparse

from kb_assets.cli.index import report_checks
from kb_assets.cli.runner import verify_commit
from kb_assets.cli.session import indexed_sha, open_session


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Flags of ``kb verify``."""
    p.add_argument(
        "--sha", default=None, metavar="REV", help="indexed commit (default: newest indexed on HEAD's branch)"
    )


def run(args: argparse.Namespace) -> int:
    """Run the oracle checks; one line per check; exit 1 when one failed."""
    session = open_session(args)
    sha = indexed_sha(session, args.sha)
    checks = verify_commit(session, sha)
    for name in checks.passed:
        print(f"{name}: passed")
    report_checks(checks)
    return 1 if checks.failures else 0
