"""The same Definitions under Dagster's multiprocess executor (the scale-out shape): every step in
its own process, rebuilding the Definitions from the environment, publishes exactly the snapshot
the in-process run publishes."""

from __future__ import annotations

from pathlib import Path

from tests.gitfixtures import build_repo
from tests.kbfixtures import KbEnv

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def test_multiprocess_index_equals_in_process_index(kb_env: KbEnv, tmp_path: Path) -> None:
    repo = tmp_path / "shop"
    build_repo(FIXTURES / "imports_oracle", repo)
    parallel = kb_env.kb("index", repo, "--processes", "2", "--no-verify")
    assert parallel.code == 0, parallel.stderr
    assert parallel.stdout.startswith("indexed ")
    exported = kb_env.kb("export", repo).stdout
    assert exported.strip()
    in_process = kb_env.kb("index", repo, "--full", "--no-verify")
    assert in_process.code == 0, in_process.stderr
    assert kb_env.kb("export", repo).stdout == exported


def test_processes_must_be_positive(kb_env: KbEnv, tmp_path: Path) -> None:
    repo = tmp_path / "shop"
    build_repo(FIXTURES / "imports_oracle", repo)
    bad = kb_env.kb("index", repo, "--processes", "-1")
    assert bad.code == 2
    assert "--processes" in bad.stderr
