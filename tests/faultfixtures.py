"""Helpers of the fault-injection suite (``tests/test_faults_*.py``): real ``kb`` processes to kill,
waits on what the store shows, and the reference snapshot a clean run produces.

A fault test kills or races real processes against the real database, then compares what the
store shows with what a clean, sequential run of the same commits produces (``reference``): the
same records, byte for byte, means nothing was lost and nothing half-written became visible.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from kb_resources.git.repo import GitRepo
from kb_resources.store import writes
from tests.gitfixtures import commit_tree, init_repo
from tests.kbfixtures import KbEnv

WAIT_S = 240.0
"""Upper bound on any wait for a process or a store state (a hang fails the test instead of CI)."""


def two_commit_repo(root: Path, modules: int = 12) -> tuple[Path, list[str]]:
    """A small package with two commits: the second rewrites one module and adds another."""
    repo = init_repo(root)
    files: dict[str, str] = {"pkg/__init__.py": ""}
    for i in range(modules):
        nxt = (i + 1) % modules
        files[f"pkg/m{i}.py"] = f"import os\nfrom pkg import m{nxt}\n\n\ndef f{i}(x):\n    return x + {i}\n"
    first = commit_tree(repo, files, "first")
    files["pkg/m0.py"] = "import sys\n\n\ndef f0(x):\n    return sys.argv\n"
    files["pkg/extra.py"] = "import json\nfrom pkg import m1\n"
    second = commit_tree(repo, files, "second")
    return repo, [first, second]


def spawn_kb(env: KbEnv, *args: str | Path, extra_env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """Start ``kb`` as a real subprocess (its own process group, so a kill reaches its workers)."""
    return subprocess.Popen(
        [sys.executable, "-m", "kb_assets.cli.main", *map(str, args)],
        env={**os.environ, **env.environ, **(extra_env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def finish(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    """Wait for a spawned ``kb``; (exit code, stdout, stderr)."""
    out, err = proc.communicate(timeout=WAIT_S)
    return proc.returncode, out, err


def kill_group(proc: subprocess.Popen[str]) -> None:
    """SIGKILL a spawned ``kb`` and everything in its process group, then reap it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=WAIT_S)
    assert proc.returncode == -signal.SIGKILL, f"kb exited ({proc.returncode}) before it could be killed"


def wait_until(condition: Callable[[], bool], what: str, proc: subprocess.Popen[str] | None = None) -> None:
    """Poll ``condition`` until true; fail (not hang) after WAIT_S or when ``proc`` ended first."""
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if proc is not None and proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"kb ended ({proc.returncode}) before {what}: {out} {err}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def query(engine: sa.Engine, sql: str, **params: object) -> list[tuple[object, ...]]:
    """Run one read on its own connection; the rows as tuples."""
    with engine.connect() as conn:
        return [tuple(row) for row in conn.execute(sa.text(sql), params)]


def count(engine: sa.Engine, sql: str, **params: object) -> int:
    """A ``SELECT count(*) ...`` as an int."""
    with engine.connect() as conn:
        return int(conn.execute(sa.text(sql), params).scalar_one())


def hold_commit_row(engine: sa.Engine, repo: Path, sha: str) -> sa.Connection:
    """Record the commit (exactly as ``kb index`` would) and hold its row FOR NO KEY UPDATE on the
    returned connection: a ``kb index`` of it then runs up to its publishing transaction and blocks
    there, on the UPDATE that marks the commit published (see ``PUBLISH_BLOCKED``)."""
    info = GitRepo.open(repo).commit_info(sha)
    with engine.begin() as conn:
        writes.upsert_commit(
            conn, sha=sha, tree_id=info.tree_id, parents=list(info.parents), committed_at=info.committed_at
        )
    holder = engine.connect()
    holder.execute(sa.text("SELECT 1 FROM commit_ref WHERE sha = :s FOR NO KEY UPDATE"), {"s": sha})
    return holder


PUBLISH_BLOCKED = (
    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
    "AND application_name = 'knowbase' AND wait_event_type = 'Lock' AND query LIKE 'UPDATE commit_ref%'"
)
"""How many knowbase clients wait inside a publish (snapshot rows written, commit row not yet)."""


@dataclass(frozen=True)
class Reference:
    """What clean, sequential ``kb index`` runs of some commits publish: export text per sha."""

    exports: dict[str, str]
    spans: dict[str, str]


def reference(env: KbEnv, repo: Path, shas: Sequence[str]) -> Reference:
    """Index ``shas`` in order in ``env`` (in-process) and record each commit's export and spans."""
    exports, spans = {}, {}
    for sha in shas:
        done = env.kb("index", repo, "--sha", sha, "--no-verify")
        assert done.code == 0, done.stderr
        exports[sha] = export(env, repo, sha)
        spans[sha] = env.kb("spans", repo, "--sha", sha).stdout
    return Reference(exports, spans)


def export(env: KbEnv, repo: Path, sha: str) -> str:
    """``kb export --sha`` text of an indexed commit (fails the test if it is not indexed)."""
    done = env.kb("export", repo, "--sha", sha)
    assert done.code == 0, done.stderr
    return done.stdout
