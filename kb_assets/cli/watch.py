"""``kb watch``: follow local branches and index each new first-parent commit incrementally.

The same decisions as the Dagster ``branch_sensor`` (``kb_assets.indexing.follow``), run from the
CLI: for cron/CI (``--once``) or as a long-running loop that reads the branch tips every
``--interval``, and at once when the kernel reports a ref change (``ref_events``), and the store
only when one moved (``watch_gate``). A branch's cursor
(``branch_ref``) only advances past commits that were actually published, so a failed commit is
retried (after ``watch_gate.RETRY_S`` if nothing moved meanwhile).
"""

from __future__ import annotations

import argparse
import signal
import sys
import time

from kb_assets.cli.index import report_checks
from kb_assets.cli.runner import index_commit, kept_interrupt_handlers
from kb_assets.cli.session import Session, open_session
from kb_assets.core.callgraph.graph import digest_kept, kept_resolutions
from kb_assets.core.collector import Reclaimer
from kb_assets.core.errors import BadInputError
from kb_assets.core.per_file import remember
from kb_assets.core.summary import summary_line
from kb_assets.indexing.artifact_memos import remembering_artifacts
from kb_assets.indexing.carries import carried_between_commits, write_kept
from kb_assets.indexing.follow import BranchPlan, plan_branches, watched_branches
from kb_assets.indexing.load import last_program
from kb_assets.indexing.resolution_files import write_kept_resolutions
from kb_assets.indexing.watch_gate import WatchGate
from kb_resources.git.ref_events import RefEvents
from kb_resources.git.repo import GitRepo
from kb_resources.store import reads, writes

INTERVAL_S = 0.25
"""Default seconds between looks at the branch tips. Where the kernel reports ref changes (Linux:
``ref_events``) a commit's run starts as its branch moves, and the interval is the fallback;
elsewhere a commit waits half the interval on average before its run starts: 0.5 s at the earlier
default of 1 s, a fifth of a warm Django commit's own ~2.5 s. A look reads only the refs (~0.06 ms
on Django's repository): an idle watch uses 0.13% of a core at 0.25 s, 0.03% at 1 s."""


QUIET_S = 1.0
"""Seconds without a ref change after a round before the watch collects its garbage (``Reclaimer``:
~1.1 s on Django when it examines the whole heap, after every ``collector.THAW_AFTER`` commits;
7-30 ms otherwise), during which a new commit cannot start. Where ref changes wake the watch, a
commit made within that time starts at once: on Django, a commit made 0.2 s after the previous one
was published took 2.8-3.1 s to publish instead of 1.6-1.9 s while every collection was whole. A
watch catching up on many commits still collects every ``collector.RECLAIM_EVERY`` of them."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Flags of ``kb watch``."""
    p.add_argument(
        "--branch", action="append", default=[], metavar="B", help="branch to follow (repeatable; * = all)"
    )
    p.add_argument(
        "--interval",
        type=float,
        default=INTERVAL_S,
        metavar="S",
        help="seconds between looks at the branch tips (default %(default)s; the store is read only"
        " when one moved)",
    )
    p.add_argument("--once", action="store_true", help="index what is new once, then exit")
    p.add_argument(
        "--max-catchup",
        type=int,
        default=None,
        metavar="N",
        help="index only the new tip when a branch moved more than N commits (default 50)",
    )


def run(args: argparse.Namespace) -> int:
    """Watch until interrupted (or once); exit 1 when a commit could not be published."""
    session = open_session(args)
    requested = list(args.branch) or list(session.settings.watch_branches)
    unknown = sorted(set(requested) - set(session.repo.branches()) - {"*"})
    if unknown:
        raise BadInputError(f"no local branch named {', '.join(unknown)}; see `git branch --list`")
    branches = watched_branches(session.repo, requested)
    if not branches:
        raise BadInputError(f"{session.repo.root} has no branch to watch yet; commit something first")
    max_catchup = args.max_catchup if args.max_catchup is not None else session.settings.max_catchup
    # SIGTERM (a service manager's stop) ends the watch as Ctrl-C does: the step in progress is
    # abandoned with the store unchanged by it, and the watch says it stopped.
    try:
        with (
            kept_interrupt_handlers(sigterm=signal.default_int_handler),
            carried_between_commits(),
            kept_resolutions(),
            remembering_artifacts(),
            RefEvents(session.repo.git_dir) as moves,
        ):
            return _watch(session, branches, max_catchup, once=args.once, interval=args.interval, moves=moves)
    except KeyboardInterrupt:
        print("kb: watch stopped", file=sys.stderr)
        return 0


def _watch(
    session: Session, branches: list[str], max_catchup: int, *, once: bool, interval: float, moves: RefEvents
) -> int:
    """Rounds until interrupted (or one); 1 when a commit could not be published. Between looks
    it waits ``interval`` or until a ref changes (``moves``), whichever comes first; after a round
    that indexed something, it first waits ``QUIET_S`` for a ref change before collecting."""
    failed = False
    gate = WatchGate()
    with Reclaimer() as reclaimer:
        while True:
            tips = _tips(session.repo, branches)
            if gate.due(tips, time.monotonic()):
                failed_now = _round(session, branches, max_catchup, reclaimer)
                gate.ran(tips, failed=failed_now, now=time.monotonic())
                failed = failed or failed_now
            if once:
                return 1 if failed else 0
            if reclaimer.pending and moves.watching and moves.wait(QUIET_S):
                continue  # a ref moved right after the round: look now, collect once it is quiet
            reclaimer.idle()  # between rounds nobody waits for this process
            moves.wait(interval)


def _tips(repo: GitRepo, branches: list[str]) -> dict[str, str | None]:
    """The watched branches' tips (None for a branch that is gone), read from the refs alone."""
    found = repo.branches()
    return {name: found.get(name) for name in branches}


def _round(session: Session, branches: list[str], max_catchup: int, reclaimer: Reclaimer) -> bool:
    """One look at every branch; returns True when some commit failed."""
    with session.store.engine.connect() as conn:
        published = set(reads.published_commits(conn))
        cursors = reads.branches(conn)
    failed = False
    for plan in plan_branches(session.repo, branches, cursors, published, max_catchup=max_catchup):
        cursor, ok = _follow(session, plan, reclaimer)
        failed = failed or not ok
        if cursor is not None and cursor != cursors.get(plan.branch):
            with session.store.engine.begin() as conn:
                writes.set_branch(conn, plan.branch, cursor)
    written = write_kept()  # once the round's commits are published, not on each one's way there
    if written is not None:
        write_kept_resolutions(written)
        digest_kept()
        _remember_per_file()
    return failed


def _remember_per_file() -> None:
    """Make the last commit's per-file answers while nobody waits (``per_file``): the next
    commit's forked copies, which keep nothing, then make only its changed files'."""
    program = last_program()
    if program is not None:
        remember(program)


def _follow(session: Session, plan: BranchPlan, reclaimer: Reclaimer) -> tuple[str | None, bool]:
    """Index the plan's commits in order; the new cursor and whether all of them were published."""
    if not plan.to_index:
        if plan.cursor != plan.tip:
            print(f"{plan.branch}: up to date at {plan.tip[:12]}")
        return plan.tip, True
    if plan.reason in ("jumped", "force_push"):
        print(f"{plan.branch}: {plan.reason.replace('_', ' ')}; indexing only the new tip {plan.tip[:12]}")
    cursor = plan.cursor
    for sha in plan.to_index:
        outcome = index_commit(session, sha, source="watch")
        report_checks(outcome.checks)
        if outcome.stats is None:
            print(f"kb: {plan.branch}: {sha[:12]} was not published; will retry", file=sys.stderr)
        else:
            print(f"{plan.branch}: {summary_line(outcome.stats)}")
        reclaimer.indexed()  # once the commit is reported (a failed run leaves garbage too)
        if outcome.stats is None:
            return cursor, False
        cursor = sha
    return plan.tip, True
