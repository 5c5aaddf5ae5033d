"""The same Definitions under Dagster's multiprocess executor (the scale-out shape): every step in
its own process, rebuilding the Definitions from the environment, publishes exactly the snapshot
the in-process run publishes; its step processes start from a fork server that has imported
knowbase once, unless that server belongs to another environment."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kb_assets.cli import step_start
from kb_assets.core.collector import COLLECTOR_THRESHOLDS
from tests.conftest import PgTestServer
from tests.gitfixtures import build_repo
from tests.kbfixtures import KbEnv

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _parallel_equals_in_process(env: KbEnv, repo: Path) -> None:
    parallel = env.kb("index", repo, "--processes", "2", "--no-verify")
    assert parallel.code == 0, parallel.stderr
    assert parallel.stdout.startswith("indexed ")
    exported = env.kb("export", repo).stdout
    assert exported.strip()
    in_process = env.kb("index", repo, "--full", "--no-verify")
    assert in_process.code == 0, in_process.stderr
    assert env.kb("export", repo).stdout == exported


def test_multiprocess_index_equals_in_process_index(kb_env: KbEnv, tmp_path: Path) -> None:
    repo = tmp_path / "shop"
    build_repo(FIXTURES / "imports_oracle", repo)
    _parallel_equals_in_process(kb_env, repo)


def test_a_second_environment_in_one_process_reaches_its_own_store(
    kb_env: KbEnv, pg_server: PgTestServer, tmp_path: Path
) -> None:
    """Two multiprocess runs in one process with different stores (as a library caller may do,
    and this test process does after any other test here): the fork server started for the first
    keeps its environment, so a later one spawns its steps, and each store gets its own
    repository's snapshot."""
    first, second = tmp_path / "shop", tmp_path / "history"
    build_repo(FIXTURES / "imports_oracle", first)
    build_repo(FIXTURES / "history", second)
    _parallel_equals_in_process(kb_env, first)
    database = pg_server.create_database()
    other = KbEnv(home=tmp_path / "other_home", db_url=pg_server.url(database))
    try:
        _parallel_equals_in_process(other, second)
        assert other.kb("export", first).code == 2  # each store knows its own repository only
        assert kb_env.kb("export", second).code == 2
    finally:
        other.close()
        pg_server.drop_database(database)


def test_the_fork_server_only_serves_the_environment_it_started_with(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(step_start, "_server_environ", None)
    assert step_start.start_method({"KB_HOME": "/a"}) == step_start.FORKSERVER
    assert step_start.start_method({"KB_HOME": "/a"}) == step_start.FORKSERVER
    assert step_start.start_method({"KB_HOME": "/b"}) == step_start.SPAWN
    assert step_start.start_method({"KB_HOME": "/a"}) == step_start.FORKSERVER


def test_step_processes_start_with_knowbase_imported_and_its_collector_thresholds(kb_env: KbEnv) -> None:
    """What the fork server preloads: a process forked from it has the Definitions imported and
    the collector tuned for knowbase's heaps, as the ``kb`` console script has."""
    probe = (
        "import gc, sys, multiprocessing as mp\n"
        "def child(q): q.put((gc.get_threshold(), 'kb_assets.definitions' in sys.modules))\n"
        "if __name__ == '__main__':\n"
        "    ctx = mp.get_context('forkserver')\n"
        f"    ctx.set_forkserver_preload([{step_start.PRELOADED!r}])\n"
        "    q = ctx.Queue(); p = ctx.Process(target=child, args=(q,)); p.start()\n"
        "    print(q.get()); p.join()\n"
    )
    script = kb_env.home / "probe.py"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(probe)
    env = {**kb_env.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    command = [sys.executable, str(script)]
    out = subprocess.run(command, check=False, capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str((COLLECTOR_THRESHOLDS, True))


def test_processes_must_be_positive(kb_env: KbEnv, tmp_path: Path) -> None:
    repo = tmp_path / "shop"
    build_repo(FIXTURES / "imports_oracle", repo)
    bad = kb_env.kb("index", repo, "--processes", "-1")
    assert bad.code == 2
    assert "--processes" in bad.stderr
