"""``kb index``: materialize every deterministic asset of one commit through Dagster."""

from __future__ import annotations

import argparse
import sys
from contextlib import AbstractContextManager, nullcontext

from kb_assets.cli.runner import CheckReport, index_commit
from kb_assets.cli.session import Session, open_session
from kb_assets.core.errors import BadInputError, CheckFailedError
from kb_assets.core.summary import gap_line, summary_line
from kb_assets.indexing import head_start
from kb_resources.store import reads


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Flags of ``kb index``."""
    p.add_argument(
        "--sha", default="HEAD", metavar="REV", help="commit to index (any commit-ish; default HEAD)"
    )
    group = p.add_mutually_exclusive_group()
    group.add_argument(
        "--parent", default=None, metavar="REV", help="indexed commit to reuse (default: auto)"
    )
    group.add_argument("--full", action="store_true", help="re-parse everything; reuse nothing")
    p.add_argument(
        "--gaps", type=int, default=None, metavar="N", help="print at most N gap lines (default: all)"
    )
    verify = p.add_mutually_exclusive_group()
    verify.add_argument(
        "--verify",
        action="store_true",
        default=None,
        help="also run the oracle checks (grimp, griffe); default: only for commits of <= 1000 files",
    )
    verify.add_argument(
        "--no-verify", dest="verify", action="store_false", help="never run the oracle checks"
    )
    p.add_argument(
        "--processes",
        type=int,
        default=0,
        metavar="N",
        help="run the steps under Dagster's multiprocess executor, N at once (default: in this process)",
    )


def run(args: argparse.Namespace) -> int:
    """Index the commit, print the summary line and one line per gap."""
    session = open_session(args)
    if args.processes < 0:
        raise BadInputError(
            f"--processes must be 0 (in this process) or a positive count, got {args.processes}"
        )
    sha = session.repo.resolve(args.sha)
    if args.parent is not None:
        check_parent(session, args.parent)
    with _head_start(session, sha, full=args.full, processes=args.processes):
        outcome = index_commit(
            session, sha, parent=args.parent, full=args.full, verify=args.verify, processes=args.processes
        )
    if outcome.stats is None:
        raise CheckFailedError(list(outcome.failures) or ["the snapshot was not published"])
    print(summary_line(outcome.stats))
    shown = outcome.gaps if args.gaps is None else outcome.gaps[: max(args.gaps, 0)]
    for gap in shown:
        print(gap_line(gap))
    if len(shown) < len(outcome.gaps):
        rest = len(outcome.gaps) - len(shown)
        print(f"... and {rest} more gaps (`kb index --sha {outcome.sha[:12]}` lists them all)")
    report_checks(outcome.checks)
    if not outcome.verified:
        print(f"kb: oracle checks deferred; run `kb verify --sha {sha[:12]}`", file=sys.stderr)
    return 1 if outcome.failures else 0


def _head_start(session: Session, sha: str, *, full: bool, processes: int) -> AbstractContextManager[None]:
    """The commit's parse started before the run (``head_start``), when its steps run in this
    process (under the multiprocess executor the parse runs in another)."""
    if processes > 0:
        return nullcontext()
    return head_start.started(
        session.repo,
        session.store.engine,
        sha,
        limits=session.limits(),
        workers=session.settings.workers,
        force=full,
    )


def report_checks(checks: CheckReport) -> None:
    """Failed checks and warnings on stderr, one line each."""
    for failure in checks.failures:
        print(f"kb: check failed: {failure}", file=sys.stderr)
    for warning in checks.warnings:
        print(f"kb: warning: {warning}", file=sys.stderr)


def check_parent(session: Session, parent: str) -> None:
    """``--parent`` must name a commit that is already indexed (exit 2 otherwise)."""
    base = session.repo.resolve(parent)
    with session.store.engine.connect() as conn:
        if base not in reads.published_commits(conn):
            raise BadInputError(
                f"--parent {parent} ({base[:12]}) is not indexed; index it first or drop --parent"
            )
