"""The performance benchmark behind ``make bench`` (issue 9): real corpora, the real CLI, figures.

    python bench/run.py [--work DIR] [--package django==5.2.19] [--calls 300] [--skip-watch]
                        [--history N] [--shards N]
                        [--embed-package itsdangerous==2.2.0 | --skip-embed] [--embed]

Downloads the corpus as a PyPI sdist (cached under ``--work``), commits it to a fresh git
repository, and on a fresh embedded store measures, each through the ``kb`` CLI as its own process:

- the full index of the corpus (wall, CPU, peak memory of the ``kb`` process tree);
- with ``--history N``, N one-file commits indexed by one ``kb watch`` (each commit -> published),
  so that what follows is measured on a store with history, as a team's store that has followed
  a branch for weeks is (the index's queries are planned from statistics of every commit);
- with ``--shards N``, the same full index on a second, fresh store with its parse done first by
  N concurrent ``kb parse --shard K/N`` processes (one parse worker each), and whether the two
  stores export the same bytes (``sharded_index``);
- a one-file commit on top of it (cold: a new ``kb index`` process, Dagster run included), and a
  commit that adds one file (the same, through a change of the module map);
- after each of those two, the run's slowest Dagster steps (``bench/steps.py``), and after each of
  the three, the store's size and its per-commit entries' share (``bench/store_size.py``);
- the same one-file commit picked up by a warm ``kb watch`` (time from the commit to its snapshot
  being published — the latency a team following a branch sees — and the CPU each commit cost the
  watch, its children and the server: ``WatchFigures``);
- ``kb export`` of the whole snapshot;
- MCP ``get_knowledge`` / ``find_provenance`` latency p50/p95 (``bench/mcp_latency.py``);
- ``kb embed`` throughput on a second, small corpus (``--embed-package``, itsdangerous by default:
  ~235 units, about half a minute with the model's load): every unit of its snapshot, then a
  one-file commit on top, which embeds only its new units; ``--embed`` also embeds the whole
  main corpus (Django's ~88k units at the model's ~10-16 units/s on 2 cores: hours, so opt-in;
  ``bench/embed_search.py`` measures search quality and throughput on a FastAPI application).

CPU and memory are those of the measured process and its children (parse workers, forked
copies). The embedded PostgreSQL server is not a child (it runs detached, shared by every ``kb``
process of the store), so its CPU is sampled apart (``ServerCpu``) and printed beside the
command's: on this 2-core machine the two together bound the wall time from below. Memory is
given twice: the peak RSS of the largest single process (``os.wait4``) and
the peak of the whole tree's summed PSS (sampled every 0.1 s), which counts the pages a forked copy
shares with its parent once and its own pages too.
Before the first command and after the last, the host's speed on a fixed workload
(``bench/host_speed.py``), so that figures of different hours can be compared.
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import queue
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import host_speed
import psutil
import targets
from mcp_latency import searches
from tree_cpu import TreeReading, tree_reading, tree_seconds

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


@dataclass(frozen=True)
class Measured:
    """One process's figures: wall seconds, CPU seconds (user+sys, children included), peak RSS
    (the largest of the process and its children, each on its own), and the peak of the process
    tree's summed PSS (sampled every 0.1 s: pages shared by a forked copy counted once)."""

    wall: float
    cpu: float
    peak_mib: float
    code: int
    stdout: str
    stderr: str
    tree_mib: float = 0.0
    file_mib: float = 0.0
    """File-backed pages (libraries' code, mostly) of the largest process's highest sampled RSS:
    the part of a peak that differs between machines with the same data."""
    server_cpu: float | None = None
    """CPU seconds of the embedded PostgreSQL server while the process ran (``ServerCpu``);
    None when the store is another server (``KB_DB_URL``)."""

    def said(self) -> str:
        """The first line the process printed (its summary line), from stdout, else stderr."""
        lines = (self.stdout or self.stderr).strip().splitlines()
        return lines[0] if lines else ""

    def line(self, label: str) -> str:
        status = "" if self.code == 0 else f"  (exit {self.code}: {self.stderr.strip().splitlines()[-1:]})"
        server = "" if self.server_cpu is None else f" + {self.server_cpu:.2f} s server CPU"
        return (
            f"{label:<34} {self.wall:8.2f} s wall {self.cpu:8.2f} s CPU{server} {self.peak_mib:8.0f} MiB peak"
            f" ({self.tree_mib:.0f} MiB all processes; {self.file_mib:.0f} MiB of file pages){status}"
        )


class TreeMemory:
    """The highest summed PSS of a process and its descendants, sampled on a thread, and the
    file-backed part of the highest RSS any one of them was sampled at."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak = pid, 0
        self.largest, self.largest_file = 0, 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._done.wait(0.1):
            try:
                root = psutil.Process(self.pid)
                tree = [root, *root.children(recursive=True)]
            except psutil.Error:
                continue
            total = 0
            for proc in tree:
                with contextlib.suppress(psutil.Error):
                    full = proc.memory_full_info()
                    total += full.pss
                    if full.rss > self.largest:
                        self.largest, self.largest_file = full.rss, full.shared
            self.peak = max(self.peak, total)

    def stop(self) -> float:
        """Stop sampling; the peak in MiB."""
        self._done.set()
        self._thread.join()
        return self.peak / 2**20


def measure(argv: list[str], env: dict[str, str], *, stdout_path: Path | None = None) -> Measured:
    """Run ``argv``; its own CPU time and peak RSS come from ``os.wait4``, so concurrent work
    elsewhere on the machine is not counted (wall time is the only figure it can disturb)."""
    scratch = Path(tempfile.mkdtemp(prefix="kb-bench-"))
    out_path = stdout_path or scratch / "stdout"
    err_path = scratch / "stderr"
    server = ServerCpu(embedded_pgdata(env))
    with out_path.open("w") as out, err_path.open("w") as err:
        start = time.monotonic()
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=err, text=True)
        tree = TreeMemory(proc.pid)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - start
        tree_mib = tree.stop()
        file_mib = tree.largest_file / 2**20
    server_cpu = server.stop()
    proc.returncode = os.waitstatus_to_exitcode(status)
    stdout, stderr = out_path.read_text(), err_path.read_text()
    shutil.rmtree(scratch)
    cpu = usage.ru_utime + usage.ru_stime
    return Measured(
        wall, cpu, usage.ru_maxrss / 1024, proc.returncode, stdout, stderr, tree_mib, file_mib, server_cpu
    )


def embedded_pgdata(env: dict[str, str]) -> Path | None:
    """The embedded server's data directory of a command run with ``env``; None when its settings
    name another server (``KB_DB_URL``)."""
    from kb_resources.settings import load_settings

    settings = load_settings(env)
    return settings.embedded_pgdata if settings.db_url is None else None


def server_reading(pgdata: Path | None) -> TreeReading | None:
    """The embedded server of ``pgdata`` as it is now: its postmaster and the backends,
    checkpointer and WAL writer under it (``tree_cpu``); None when none is running, or for
    another server (``pgdata`` None: ``embedded_pgdata``)."""
    from kb_resources.store.embedded import postmaster_pid

    pid = postmaster_pid(pgdata) if pgdata is not None else None
    return tree_reading(pid) if pid is not None else None


class ServerCpu:
    """The CPU the embedded server spent while a command ran, sampled on a thread every 0.1 s:
    the postmaster's own time with that of the backends it reaped, and its live children's. What
    a backend spends in the 0.1 s before it exits, and the server's last work when the command
    stops it (the shutdown checkpoint), fall after the last sample and are not counted: a command
    of half a second reads anywhere from 0 to 0.16 s (``kb status`` on Django's store, ten runs)."""

    def __init__(self, pgdata: Path | None) -> None:
        self.pgdata = pgdata
        self.first = server_reading(pgdata)
        self.last = self.first
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        if pgdata is not None:
            self._thread.start()

    def _sample(self) -> None:
        while not self._done.wait(0.1):
            self._look()

    def _look(self) -> None:
        now = server_reading(self.pgdata)
        if now is not None:
            self.last = now

    def stop(self) -> float | None:
        """Stop sampling; the server's CPU seconds (None without an embedded server)."""
        if self.pgdata is None:
            return None
        self._done.set()
        self._thread.join()
        self._look()
        return tree_seconds(self.first, self.last)


def git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
    }
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=bench", "-c", "user.email=bench@example.com", *args],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    ).stdout.strip()


def corpus(work: Path, requirement: str) -> Path:
    """The sdist of ``requirement`` unpacked and committed as a git repository (cached), with
    ``main`` checked out at that commit and nothing else in the tree: the figures commit on top of
    it, and a cached corpus that kept an earlier run's commits was a larger tree to index each
    time (Django: 2,826 files instead of 2,823 after a few ``make bench``)."""
    name = requirement.replace("==", "-")
    repo = work / name
    if (repo / ".git").exists():
        sdist = git(repo, "rev-list", "--max-parents=0", "HEAD").splitlines()[0]
        git(repo, "checkout", "-q", "-f", "-B", "main", sdist)
        git(repo, "clean", "-q", "-f", "-d", "-x")
        return repo
    sdists = work / "sdists"
    sdists.mkdir(parents=True, exist_ok=True)
    found = [p for p in sdists.iterdir() if p.name.lower().startswith(name.lower()) and p.suffix == ".gz"]
    if not found:
        print(f"downloading {requirement} (sdist) ...", flush=True)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-deps",
                "--no-binary",
                ":all:",
                "-d",
                str(sdists),
                requirement,
            ],
            check=True,
        )
        found = [p for p in sdists.iterdir() if p.name.lower().startswith(name.lower()) and p.suffix == ".gz"]
    unpack = work / f"{name}.unpack"
    shutil.rmtree(unpack, ignore_errors=True)
    with tarfile.open(sorted(found)[0]) as tar:
        tar.extractall(unpack, filter="data")
    (top,) = list(unpack.iterdir())
    top.rename(repo)
    shutil.rmtree(unpack)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", f"{requirement} sdist")
    return repo


def one_file_commit(repo: Path, n: int) -> str:
    """Append a function to one library module and commit it; the new sha."""
    target = next(
        p
        for p in sorted(repo.rglob("*.py"))
        if "test" not in str(p.relative_to(repo)) and p.stat().st_size > 2000
    )
    with target.open("a") as f:
        f.write(f"\n\ndef _kb_bench_probe_{n}() -> int:\n    return {n}\n")
    git(repo, "commit", "-q", "-am", f"bench: one-file change {n}")
    return git(repo, "rev-parse", "HEAD")


def new_file_commit(repo: Path, n: int) -> str:
    """Add a module next to ``one_file_commit``'s, importing that module, and commit it; the new
    sha. A file added changes the module map: the call graph resolves again the files whose facts
    name the new module (``resolutions.looked_up_names``), here only the new file."""
    sibling = next(
        p
        for p in sorted(repo.rglob("*.py"))
        if "test" not in str(p.relative_to(repo)) and p.stat().st_size > 2000
    )
    module = ".".join(sibling.relative_to(repo).with_suffix("").parts)
    while sibling.with_name(f"_kb_bench_new_{n}.py").exists():  # the corpus keeps earlier runs' commits
        n += 1
    added = sibling.with_name(f"_kb_bench_new_{n}.py")
    added.write_text(f"import {module}\n\n\ndef _kb_bench_new_{n}() -> object:\n    return {module}\n")
    git(repo, "add", str(added.relative_to(repo)))
    git(repo, "commit", "-q", "-m", f"bench: new file {n}")
    return git(repo, "rev-parse", "HEAD")


def cold_commit(label: str, repo: Path, env: dict[str, str]) -> Measured:
    """Index the commit just made in a new ``kb index`` process: its figures, its summary line and
    its slowest steps printed."""
    run = measure(kb("index", str(repo), "--gaps", "0"), env)
    print(run.line(label))
    print("   ", run.stdout.strip().splitlines()[0] if run.stdout.strip() else run.stderr.strip()[-300:])
    steps(repo, env)
    return run


MCP_P50 = re.compile(r"^(get_knowledge|find_provenance): p50 ([0-9.]+) ms")
"""A tool's median latency in ``bench/mcp_latency.py``'s output."""


def mcp_latency(repo: Path, calls: int, env: dict[str, str]) -> list[float]:
    """Run ``bench/mcp_latency.py`` on the store, passing on each line it prints as it comes, and
    return the two tools' median latencies in ms (fewer when it failed before them)."""
    print("MCP latency (bench/mcp_latency.py):", flush=True)
    argv = [sys.executable, str(HERE / "mcp_latency.py"), str(repo), "--calls", str(calls), "--starts", "3"]
    medians: list[float] = []
    with subprocess.Popen(
        argv, env={**env, "PYTHONUNBUFFERED": "1"}, stdout=subprocess.PIPE, text=True
    ) as script:
        assert script.stdout is not None
        for line in script.stdout:
            print(line, end="", flush=True)
            if found := MCP_P50.match(line):
                medians.append(float(found[2]))
    return medians


def _script(script: str, *args: str, env: dict[str, str]) -> None:
    """Run ``bench/<script>`` on the same store, its output in order after ours."""
    sys.stdout.flush()
    subprocess.run([sys.executable, str(HERE / script), *args], env=env, check=False)


def steps(repo: Path, env: dict[str, str]) -> None:
    """Print where the newest run spent its time (``bench/steps.py``)."""
    _script("steps.py", str(repo), "--top", "8", env=env)


def store_size(repo: Path, env: dict[str, str]) -> None:
    """Print the store's size and its per-commit entries' share (``bench/store_size.py``)."""
    _script("store_size.py", str(repo), env=env)


def kb(*args: str) -> list[str]:
    return [sys.executable, "-m", "kb_assets.cli.main", *args]


def _idle(pid: int, *, settle: float = 2.0, timeout: float = 300.0) -> None:
    """Wait until process ``pid`` has stopped using CPU (its start-up and first poll are done)."""
    proc = psutil.Process(pid)
    deadline = time.monotonic() + timeout
    before = sum(proc.cpu_times()[:2])
    time.sleep(settle)
    while time.monotonic() < deadline:
        now = sum(proc.cpu_times()[:2])
        if now - before < 0.1:
            return
        before = now
        time.sleep(settle)


@dataclass(frozen=True)
class WatchFigures:
    """A warm ``kb watch``: seconds from each commit after its first to the published snapshot,
    its RSS once each commit is published (a long-running process must not grow commit after
    commit), and the CPU each commit cost (``tree_cpu``): the watch's with its forked copies' and
    its frame checks' process's until the snapshot was published, the embedded server's in the
    same time (None for another server), and the watch's until it was idle again (what it does
    once a commit is published: the kept state written, a full collection)."""

    seconds: tuple[float, ...]
    rss_mib: tuple[float, ...]
    cpu: tuple[float, ...] = ()
    server_cpu: tuple[float, ...] | None = None
    cpu_to_idle: tuple[float, ...] = ()

    def cpu_line(self) -> str:
        """The medians of the CPU figures, for the line under the commits' seconds."""
        if not self.cpu:
            return ""
        server = ""
        if self.server_cpu is not None:
            server = f" + {statistics.median(self.server_cpu):.2f} s server CPU"
        return (
            f"CPU a warm commit (median): {statistics.median(self.cpu):.2f} s kb watch and its children"
            f"{server} until published; {statistics.median(self.cpu_to_idle):.2f} s kb watch until idle again"
        )


WATCHED_COMMITS = 6
"""Commits the warm-watch figure makes: the first loads the whole program, the other five are
warm (two, until stop 54, too few to tell an hour's noise of ~0.1-0.2 s from a change)."""


def warm_watch_latency(
    repo: Path, env: dict[str, str], n: int, commits: int = WATCHED_COMMITS
) -> WatchFigures | None:
    """Seconds from one-file commits to their published snapshots under an already running
    ``kb watch`` (commits ``n`` to ``n + commits - 1``; the first is not timed: it loads the whole
    program), and the watch's memory after each."""
    lines: queue.Queue[str] = queue.Queue()
    watch = subprocess.Popen(
        kb("watch", str(repo), "--interval", "0.2"),
        env={**env, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert watch.stdout is not None
    stream = watch.stdout

    def pump() -> None:
        for line in stream:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()

    def published(sha: str) -> float | None:
        start = time.monotonic()
        deadline = start + 600
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=1.0)
            except queue.Empty:
                if watch.poll() is not None:
                    return None
                continue
            if sha[:12] in line and "indexed" in line:
                return time.monotonic() - start
        return None

    def rss() -> float:
        return float(psutil.Process(watch.pid).memory_info().rss) / 2**20

    pgdata = embedded_pgdata(env)
    try:
        _idle(watch.pid)
        seconds: list[float] = []
        memory: list[float] = []
        cpu: list[float] = []
        server: list[float] = []
        to_idle: list[float] = []
        for i in range(commits):
            watch_before, server_before = tree_reading(watch.pid), server_reading(pgdata)
            took = published(one_file_commit(repo, n + i))
            if took is None:
                return None
            watch_published, server_published = tree_reading(watch.pid), server_reading(pgdata)
            _idle(watch.pid)
            if i > 0:  # the first commit a fresh process indexes loads the whole program
                seconds.append(took)
                cpu.append(tree_seconds(watch_before, watch_published))
                server.append(tree_seconds(server_before, server_published))
                to_idle.append(tree_seconds(watch_before, tree_reading(watch.pid)))
            memory.append(rss())
        server_cpu = tuple(server) if pgdata is not None else None
        return WatchFigures(tuple(seconds), tuple(memory), tuple(cpu), server_cpu, tuple(to_idle))
    finally:
        watch.terminate()
        try:
            watch.wait(timeout=30)
        except subprocess.TimeoutExpired:
            watch.kill()


HISTORY_FROM = 1000
"""The number of the first one-file commit ``--history`` makes (the figures' commits are 1-4)."""


def grow_history(repo: Path, env: dict[str, str], commits: int) -> None:
    """Index ``commits`` one-file commits through one ``kb watch`` and print how long each took
    (commit -> published): the figures after it are then of a store that has followed a branch,
    where PostgreSQL plans with statistics of many commits (README, **Checks against the base**)."""
    started = time.monotonic()
    grown = warm_watch_latency(repo, env, HISTORY_FROM, commits=commits)
    if grown is None:
        print(f"history: the watch did not publish all {commits} commits")
        return
    took, elapsed = sorted(grown.seconds), time.monotonic() - started
    print(
        f"history: {commits} one-file commits indexed by a warm kb watch in {elapsed:.0f} s"
        f" (commit -> published after the first: median {took[len(took) // 2]:.2f} s, max {took[-1]:.2f} s;"
        f" watch RSS at the end {grown.rss_mib[-1]:.0f} MiB)"
    )
    store_size(repo, env)


SEARCHES = (
    "sign a value with a secret key",
    "check that a signed token has not expired",
    "serialize data into a URL-safe string",
    "what happens when a signature does not match",
    "derive a key from the secret and a salt",
)
"""Plain-language questions for ``search_knowledge`` on the embedding corpus (asked four times
over: latency, not quality, is measured; ``bench/embed_search.py`` measures quality)."""


def embed_throughput(work: Path, requirement: str, env: dict[str, str]) -> None:
    """``kb embed`` of a small corpus's whole snapshot (the model's load included), then of a
    one-file commit on top of it (only its new units are embedded): each as its own process, with
    the command's own summary line (units embedded and reused, texts per second)."""
    repo = corpus(work, requirement)
    if not indexed(repo, env) or not embedded(repo, env, f"kb embed ({requirement})"):
        return
    print("   ", searches(str(repo), SEARCHES * 4, env))
    one_file_commit(repo, 1)
    if indexed(repo, env):
        embedded(repo, env, "kb embed after a one-file commit")


def sharded_index(repo: Path, env: dict[str, str], work: Path, shards: int) -> None:
    """The full index of ``repo``'s HEAD again, on a fresh store, its parse split first over
    ``shards`` concurrent ``kb parse --shard K/N`` processes of one parse worker each (the shape of
    N one-core machines sharing a store); then the index, which parses nothing, and a byte
    comparison of both stores' exports of the commit (``env``'s store holds the plain index)."""
    home = work / f"home-shards-{os.getpid()}"
    sharded = {**env, "KB_HOME": str(home)}
    try:
        measure(kb("migrate", str(repo)), sharded)
        parses: dict[int, Measured] = {}

        def parse(k: int) -> None:
            parses[k] = measure(
                kb("parse", str(repo), "--shard", f"{k}/{shards}"), {**sharded, "KB_WORKERS": "1"}
            )

        start = time.monotonic()
        threads = [threading.Thread(target=parse, args=(k,)) for k in range(shards)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        print(f"{f'{shards} kb parse shards at once':<34} {time.monotonic() - start:8.2f} s wall")
        for k in range(shards):
            print(parses[k].line(f"    kb parse --shard {k}/{shards}"))
            print(f"        {parses[k].said()}")
        index = measure(kb("index", str(repo), "--gaps", "0"), sharded)
        print(index.line("full index after the shards"))
        print("   ", index.said())
        head = git(repo, "rev-parse", "HEAD")
        exports = [work / "export-plain.jsonl", work / "export-sharded.jsonl"]
        for environment, path in zip((env, sharded), exports, strict=True):
            measure(kb("export", str(repo), "--sha", head), environment, stdout_path=path)
        same = exports[0].read_bytes() == exports[1].read_bytes() and exports[0].stat().st_size > 0
        print(f"    its export is {'byte-identical to' if same else 'NOT the same as'} the plain index's")
    finally:
        shutil.rmtree(home, ignore_errors=True)


def indexed(repo: Path, env: dict[str, str]) -> bool:
    """Index ``repo``'s HEAD, untimed; whether it worked (if not, says why)."""
    run = measure(kb("index", str(repo), "--gaps", "0"), env)
    if run.code != 0:
        print(run.line(f"kb index {repo.name}"))
    return run.code == 0


def embedded(repo: Path, env: dict[str, str], label: str) -> bool:
    """Time ``kb embed`` of ``repo``'s HEAD and print its figures and summary line; whether it
    worked."""
    run = measure(kb("embed", str(repo)), env)
    print(run.line(label))
    said = (run.stdout if run.code == 0 else run.stderr).strip().splitlines()
    if said:
        print("   ", said[0] if run.code == 0 else said[-1])
    return run.code == 0


def commits_on_top(repo: Path, env: dict[str, str], *, watch: bool) -> dict[targets.Target, list[float]]:
    """A one-file and a new-file commit, each indexed cold, then (with ``watch``) one-file commits
    picked up by a warm ``kb watch``: their figures printed, the one-file ones returned."""
    figures: dict[targets.Target, list[float]] = {}
    one_file_commit(repo, 1)
    cold = cold_commit("one-file commit, cold kb index", repo, env)
    if cold.code == 0:
        figures[targets.COLD_COMMIT] = [cold.wall]
    store_size(repo, env)
    new_file_commit(repo, 1)
    cold_commit("new-file commit, cold kb index", repo, env)
    if watch:
        warm = warm_watch_latency(repo, env, 2)  # commits 2 to 7
        shown = (
            "did not publish"
            if warm is None
            else ", ".join(f"{s:.2f}" for s in warm.seconds)
            + f" s commit -> published (median {statistics.median(warm.seconds):.2f} s; watch RSS"
            + " after each of its commits: "
            + ", ".join(f"{m:.0f}" for m in warm.rss_mib)
            + " MiB)"
        )
        print(f"{'one-file commit, warm kb watch':<34} {shown}")
        if warm is not None and (cpu := warm.cpu_line()):
            print(f"{'':<34} {cpu}")
        if warm is not None:
            figures[targets.WARM_COMMIT] = list(warm.seconds)
        store_size(repo, env)
    return figures


def arguments() -> argparse.Namespace:
    """The command line of ``make bench``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path.home() / ".cache" / "knowbase-bench")
    parser.add_argument("--package", default="django==5.2.19")
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument(
        "--embed",
        action="store_true",
        help="also time `kb embed` of the whole snapshot (~10 units/s on 2 cores: hours on Django)",
    )
    parser.add_argument("--skip-watch", action="store_true")
    parser.add_argument(
        "--history",
        type=int,
        default=0,
        metavar="N",
        help="before the one-file commits, index N one-file commits with a kb watch, so that those "
        "figures are of a store with history (~8 s a commit here; stop 36 saw plans change at ~140)",
    )
    parser.add_argument(
        "--shards",
        type=int,
        default=0,
        metavar="N",
        help="also index the corpus on a fresh store after N concurrent `kb parse --shard K/N`",
    )
    parser.add_argument(
        "--embed-package",
        default="itsdangerous==2.2.0",
        help="the small corpus whose whole snapshot `kb embed` embeds (default %(default)s)",
    )
    parser.add_argument("--skip-embed", action="store_true", help="do not time `kb embed` at all")
    return parser.parse_args()


def main() -> int:
    args = arguments()

    work: Path = args.work.resolve()
    repo = corpus(work, args.package)
    head = git(repo, "rev-parse", "HEAD")
    files = len([p for p in git(repo, "ls-files", "*.py").splitlines() if p])
    home = work / f"home-{os.getpid()}"
    env = {**os.environ, "KB_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    env.pop("KB_DB_URL", None)
    print(f"corpus {args.package}: {files} .py files at {head[:12]}; store {home}")
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()}")
    before = host_speed.measure()
    print(before.line("host speed, before (host_speed.py)"), flush=True)
    figures: dict[targets.Target, list[float]] = {}
    try:
        migrate = measure(kb("migrate", str(repo)), env)
        print(migrate.line("kb migrate (first use, not indexed)"))
        full = measure(kb("index", str(repo), "--gaps", "0"), env)
        print(full.line("full index"))
        print("   ", full.said())
        if full.code == 0:
            figures[targets.FULL_INDEX], figures[targets.PEAK_MEMORY] = [full.wall], [full.peak_mib]
        steps(repo, env)
        store_size(repo, env)
        if args.shards > 0:
            sharded_index(repo, env, work, args.shards)
        if args.history > 0:
            grow_history(repo, env, args.history)
        figures.update(commits_on_top(repo, env, watch=not args.skip_watch))
        export = measure(kb("export", str(repo)), env, stdout_path=work / "export.jsonl")
        records = sum(1 for _ in (work / "export.jsonl").open())
        print(export.line("kb export") + f"  ({records} records)")
        figures[targets.MCP_P50] = mcp_latency(repo, args.calls, env)
        if not args.skip_embed:
            embed_throughput(work, args.embed_package, env)
        if args.embed:
            embedded(repo, env, "kb embed (the whole main corpus)")
        after = host_speed.measure()
        print(after.line("host speed, after"))
        print("\n".join(targets.report(figures, (before.ratio + after.ratio) / 2)))
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
