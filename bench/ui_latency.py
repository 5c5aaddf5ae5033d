"""How long a commit waits to be published when ``kb ui`` (Dagster's daemon) follows the branch.

    python bench/ui_latency.py REPO [--commits 3] [--idle 30] [--burst 0] [--port 3987]

Starts ``kb ui`` for REPO (``KB_HOME``/``KB_DB_URL`` as for ``kb``; REPO already indexed), waits
until its ``branch_sensor`` has caught up with HEAD, then measures:

- the CPU the UI's processes (webserver, daemon, code server) use while nothing happens, as a
  share of one core over ``--idle`` seconds: the price of the sensor's ticks;
- for each of ``--commits`` one-file commits, the seconds from the commit to its published
  snapshot: the sensor's pickup, the run queue, the run's own process and its Dagster run;
- with ``--burst N``, N one-file commits made at once (a push of several commits): the seconds
  until the last is published and until no run is left, the runs that did not succeed, and the
  peaks of runs in progress at once, of the store server's connections and of the memory (PSS)
  of the UI's processes.

This is the latency of the path a team sees in the UI; ``kb watch`` is the other path
(``bench/run.py``). Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil
from run import TreeMemory, git, kb, one_file_commit

from kb_assets.cli.instance import open_instance
from kb_assets.jobs import INDEX_JOB
from kb_resources.git.repo import GitRepo
from kb_resources.settings import load_settings
from kb_resources.store import reads
from kb_resources.store.engine import Store, open_store


def published(
    store: Store, shas: Sequence[str], timeout: float, poll: Callable[[], None] | None = None
) -> float | None:
    """Seconds until every one of ``shas`` is published (checked, and ``poll`` called, every
    0.1 s), or None after ``timeout``."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        with store.engine.connect() as conn:
            if set(shas) <= set(reads.published_commits(conn)):
                return time.monotonic() - start
        if poll is not None:
            poll()
        time.sleep(0.1)
    return None


def group_cpu(root: psutil.Process) -> float:
    """CPU seconds (user + system) of ``root`` and every process under it, as they are now."""
    total = 0.0
    for proc in [root, *root.children(recursive=True)]:
        try:
            times = proc.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def settle(
    instance: Any, *, quiet: float = 12.0, timeout: float = 1800.0, poll: Callable[[], None] | None = None
) -> float:
    """Wait until no Dagster run has been in progress for ``quiet`` seconds: the index run and
    the ``verify_commit`` run the daemon requests a few seconds after it (grimp and griffe over
    the whole commit: tens of seconds on Django) are over, so the next commit runs alone. Calls
    ``poll`` every 0.5 s meanwhile; returns the moment (``time.monotonic``) a run was last seen in
    progress."""
    import dagster as dg
    from dagster._core.storage.dagster_run import NOT_FINISHED_STATUSES

    deadline = time.monotonic() + timeout
    calm_since = time.monotonic()
    while time.monotonic() < deadline:
        if instance.get_runs(filters=dg.RunsFilter(statuses=NOT_FINISHED_STATUSES), limit=1):
            calm_since = time.monotonic()
        elif time.monotonic() - calm_since >= quiet:
            break
        if poll is not None:
            poll()
        time.sleep(0.5)
    return calm_since


def phases(instance: Any, sha: str, committed: float) -> str:
    """Where the commit's wait went, from its index run's record: the sensor's pickup (commit to
    run created), the queue and the run's process start (created to started), the run itself."""
    import dagster as dg

    records = instance.get_run_records(
        filters=dg.RunsFilter(job_name=INDEX_JOB, tags={"dagster/partition": sha}), limit=1
    )
    if not records or records[0].start_time is None or records[0].end_time is None:
        return "no finished index run recorded"
    record = records[0]
    created = record.create_timestamp.timestamp()
    return (
        f"pickup {created - committed:.2f} s, queue and process start {record.start_time - created:.2f} s, "
        f"run {record.end_time - record.start_time:.2f} s"
    )


def burst(instance: Any, store: Store, ui_pid: int, repo: Path, count: int) -> None:
    """Make ``count`` one-file commits at once and watch the UI take them (module docstring)."""
    import dagster as dg

    peaks = {"runs": 0, "connections": 0}

    def sample() -> None:
        running = instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED]))
        with store.engine.connect() as conn:
            connections = int(conn.exec_driver_sql(CONNECTIONS).scalar_one())
        peaks["runs"] = max(peaks["runs"], len(running))
        peaks["connections"] = max(peaks["connections"], connections)

    first = int(git(repo, "rev-list", "--count", "HEAD"))
    created_after = datetime.now(UTC)
    memory = TreeMemory(ui_pid)
    started = time.monotonic()
    shas = [one_file_commit(repo, first + i) for i in range(count)]
    last = published(store, shas, 1800.0, poll=sample)
    ended = settle(instance, poll=sample) - started
    pss = memory.stop()
    failed = instance.get_runs(
        filters=dg.RunsFilter(
            statuses=[dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED], created_after=created_after
        )
    )
    shown = "not all published within 1800 s" if last is None else f"{last:.2f} s"
    print(
        f"burst of {count} one-file commits: last published {shown}, runs over {ended:.2f} s; "
        f"{len(failed)} of its runs failed or were canceled; at most {peaks['runs']} runs in progress, "
        f"{peaks['connections']} server connections, {pss:.0f} MiB (PSS) of the UI's processes"
    )


CONNECTIONS = "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--commits", type=int, default=3)
    parser.add_argument("--idle", type=float, default=30.0, help="seconds of idle CPU measured")
    parser.add_argument("--burst", type=int, default=0, help="one-file commits at once, after the others")
    parser.add_argument("--port", type=int, default=3987)
    args = parser.parse_args()
    repo: Path = args.repo.resolve()
    settings = load_settings()
    store = open_store(settings, GitRepo.open(str(repo)).key(), read_only=True, migrate=False)
    instance = open_instance(settings, store)
    log = open(os.devnull, "wb")  # noqa: SIM115 - closed with the UI below
    ui = subprocess.Popen(
        kb("ui", str(repo), "--port", str(args.port)), stdout=log, stderr=log, start_new_session=True
    )
    try:
        head = git(repo, "rev-parse", "HEAD")
        caught_up = published(store, [head], 600.0)
        if caught_up is None:
            print("kb ui: the sensor did not publish HEAD within 600 s")
            return 1
        root = psutil.Process(ui.pid)
        settle(instance)  # the catch-up run and the verify run the other sensor starts after it
        before = group_cpu(root)
        time.sleep(args.idle)
        idle = (group_cpu(root) - before) / args.idle
        print(f"kb ui idle: {idle * 100:.2f}% of one core over {args.idle:.0f} s")
        base = int(git(repo, "rev-list", "--count", "HEAD"))
        for i in range(args.commits):
            committed = time.time()
            sha = one_file_commit(repo, base + i)
            took = published(store, [sha], 600.0)
            shown = "did not publish within 600 s" if took is None else f"{took:.2f} s"
            print(f"one-file commit {sha[:12]} under kb ui: {shown} commit -> published", flush=True)
            settle(instance)  # the run ends a moment after it published
            print(f"    {phases(instance, sha, committed)}", flush=True)
        if args.burst:
            burst(instance, store, ui.pid, repo, args.burst)
        return 0
    finally:
        ui.terminate()  # kb ui stops the Dagster group it started (SIGINT, then SIGKILL)
        try:
            ui.wait(timeout=60)
        except subprocess.TimeoutExpired:
            ui.kill()
        log.close()
        store.close()


if __name__ == "__main__":
    raise SystemExit(main())
