"""``kb watch``: the sensor's logic from the CLI, on work trees and on bare repositories."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from kb_assets.cli.watch import QUIET_S
from kb_assets.core.collector import THAW_AFTER, tune_collector
from kb_resources.git.ref_events import RefEvents
from kb_resources.git.repo import GitRepo
from kb_resources.settings import load_settings
from kb_resources.store.engine import open_store
from tests.faultfixtures import count, finish, kill_group, spawn_kb, wait_until
from tests.gitfixtures import commit_tree, init_repo, run_git
from tests.kbfixtures import KbEnv


def _commit(repo: Path, n: int) -> str:
    return commit_tree(
        repo, {"pkg/__init__.py": "", f"pkg/m{n}.py": f"import os\nimport pkg.m{n - 1}\n"}, f"c{n}"
    )


def test_watch_once_indexes_each_new_commit_and_remembers_the_cursor(kb_env: KbEnv, tmp_path: Path) -> None:
    """`kb watch --once` indexes every new first-parent commit oldest first, incrementally, keeps
    the cursor in the store, and a second run finds nothing to do."""
    repo = init_repo(tmp_path / "r")
    _commit(repo, 1)
    assert kb_env.kb("index", repo).code == 0
    second, third = _commit(repo, 2), _commit(repo, 3)
    res = kb_env.kb("watch", repo, "--once")
    assert res.code == 0, res.stderr
    lines = res.stdout.splitlines()
    assert [line.split()[2] for line in lines] == [second[:12], third[:12]]
    assert all(line.startswith("main: indexed ") and "(incremental)" in line for line in lines)
    status = kb_env.kb("status", repo, "--json").jsonl()[0]
    assert status["branches"]["main"]["watched"] is True
    assert status["branches"]["main"]["indexed"] == third
    again = kb_env.kb("watch", repo, "--once")
    assert again.code == 0
    assert "indexed" not in again.stdout


def test_watch_follows_a_bare_repository_receiving_pushes(kb_env: KbEnv, tmp_path: Path) -> None:
    """A bare repository that receives pushes is followed the same way (no work tree needed)."""
    bare = init_repo(tmp_path / "server.git", bare=True)
    work = init_repo(tmp_path / "work")
    run_git(work, "remote", "add", "origin", str(bare))
    _commit(work, 1)
    run_git(work, "push", "-q", "origin", "main")
    first = kb_env.kb("watch", bare, "--once", "--branch", "main")
    assert first.code == 0, first.stderr
    assert "indexed" in first.stdout
    pushed = _commit(work, 2)
    run_git(work, "push", "-q", "origin", "main")
    second = kb_env.kb("watch", bare, "--once", "--branch", "main")
    assert second.code == 0, second.stderr
    assert f"indexed {pushed[:12]} (incremental)" in second.stdout


def test_watch_rejects_an_unknown_branch(kb_env: KbEnv, tmp_path: Path) -> None:
    """An unknown --branch is bad input: exit 2 with one line."""
    repo = init_repo(tmp_path / "r")
    _commit(repo, 1)
    res = kb_env.kb("watch", repo, "--once", "--branch", "nope")
    assert res.code == 2
    assert "nope" in res.stderr


@pytest.mark.parametrize("interval", ["0.1", "3600"], ids=["looks", "ref-events"])
def test_a_running_watch_indexes_a_commit_made_while_it_waits(
    kb_env: KbEnv, tmp_path: Path, interval: str
) -> None:
    """A long-running `kb watch` that found its branch up to date picks up the next commit (the tips
    moved, so a round runs) and publishes it, then keeps running until stopped. With looks an hour
    apart it still does: the kernel's report of the ref change wakes it (``ref_events``; Linux,
    where CI runs)."""
    repo = init_repo(tmp_path / "r")
    _commit(repo, 1)
    assert kb_env.kb("index", repo).code == 0
    engine = open_store(load_settings(kb_env.environ), GitRepo.open(repo).key()).engine
    watch = spawn_kb(kb_env, "watch", repo, "--interval", interval)
    try:
        wait_until(lambda: count(engine, "SELECT count(*) FROM branch_ref") == 1, "the first round", watch)
        second = _commit(repo, 2)
        published = "SELECT count(*) FROM commit_ref WHERE sha = :sha AND published_at IS NOT NULL"
        cursor = "SELECT count(*) FROM branch_ref WHERE name = 'main' AND sha = :sha"
        wait_until(lambda: count(engine, cursor, sha=second) == 1, "the cursor past the new commit", watch)
        assert count(engine, published, sha=second) == 1
        assert watch.poll() is None
    finally:
        watch.send_signal(signal.SIGINT)
        code, _, err = finish(watch)
        engine.dispose()
    assert code == 0, err
    assert "kb: watch stopped" in err


def test_sigterm_stops_a_watch_that_has_indexed_even_when_it_started_with_sigint_ignored(
    kb_env: KbEnv, tmp_path: Path
) -> None:
    """A service manager stops ``kb watch`` with SIGTERM. Started the way a script's background job
    starts (SIGINT ignored), the watch used to ignore SIGTERM for good after its first index run:
    Dagster's run maps SIGTERM to SIGINT's handler and leaves it so. It now stops as from Ctrl-C."""
    repo = init_repo(tmp_path / "r")
    first = _commit(repo, 1)
    engine = open_store(load_settings(kb_env.environ), GitRepo.open(repo).key()).engine
    watch = subprocess.Popen(
        [sys.executable, "-m", "kb_assets.cli.main", "watch", str(repo), "--interval", "0.1"],
        env={**os.environ, **kb_env.environ},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),  # noqa: PLW1509 - the point
    )
    try:
        cursor = "SELECT count(*) FROM branch_ref WHERE name = 'main' AND sha = :sha"
        wait_until(lambda: count(engine, cursor, sha=first) == 1, "the end of the first index run", watch)
        watch.send_signal(signal.SIGTERM)
        try:
            _, err = watch.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            kill_group(watch)
            raise AssertionError("kb watch ignored SIGTERM") from None
    finally:
        if watch.poll() is None:
            kill_group(watch)
        engine.dispose()
    assert watch.returncode == 0, err
    assert "kb: watch stopped" in err


def test_a_long_running_watch_collects_the_garbage_its_commits_leave(
    kb_env: KbEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each commit a watch indexes leaves garbage cycles (a Dagster run's per-step types, config
    snapshots, SQL expressions) that ``paused_gc`` moves to the collector's oldest generation,
    where no collection came on its own: the watch's memory grew with every commit (~9 MiB each on
    Django). Under the thresholds ``kb`` runs with, the real loop indexes commit after commit, and
    the objects the collector tracks, counted whenever the watch goes idle, stay flat from one
    collection of the whole heap to the next (``Reclaimer``)."""
    repo = init_repo(tmp_path / "r")
    files = {
        "pkg/__init__.py": "",
        **{f"pkg/m{n}.py": f"import pkg.m{n - 1}\n\ndef f{n}():\n    return {n}\n" for n in range(1, 6)},
    }
    commit_tree(repo, files, "c0")
    tracked: list[int] = []

    def between_rounds(_seconds: float) -> None:
        """The watch's sleep: count what survived the round, then make the next commit."""
        tracked.append(len(gc.get_objects()) + gc.get_freeze_count())
        if len(tracked) > 10:
            raise KeyboardInterrupt
        n = len(tracked)
        files[f"pkg/m{n % 5 + 1}.py"] += f"\ndef g{n}():\n    return f{n % 5 + 1}()\n"
        commit_tree(repo, files, f"c{n}")

    thresholds = gc.get_threshold()

    def waited(_self: RefEvents, seconds: float) -> bool:
        """The watch's waits: after a round, a quiet ``QUIET_S`` (no ref moves, so it collects), then
        the wait between looks, which is the hook (nothing else in the process waits through it)."""
        if seconds != QUIET_S:
            between_rounds(seconds)
        return False

    monkeypatch.setattr(RefEvents, "wait", waited)
    tune_collector()
    try:
        res = kb_env.kb("watch", repo, "--interval", "0")
    finally:
        gc.set_threshold(*thresholds)
    assert res.code == 0, res.stderr
    assert res.stdout.count("main: indexed") == 11, res.stdout
    # The first rounds still settle (the first incremental run's imports, caches). After them the
    # program grows by a function a commit, and psycopg's bounded cache of parsed queries fills:
    # ~35 objects a commit. A commit's garbage left uncollected was ~12,000 objects here, ~20,000
    # on Django. Counted frozen or not (``gc.get_objects`` leaves the frozen ones out).
    # Between them, a collection of what came since leaves that commit's garbage among the frozen
    # heap (~11,000 objects here) for the next collection of the whole heap, after THAW_AFTER
    # commits: after rounds 1, 6 and 11.
    thawed = tracked[::THAW_AFTER]
    assert len(thawed) == 3, tracked
    assert thawed[-1] - thawed[1] < 2_000, tracked
    assert max(tracked) - thawed[1] < THAW_AFTER * 15_000, tracked
