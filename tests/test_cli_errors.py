"""Bad input and an unreachable store: the contract's exit codes, one clear line on stderr.

These run ``kb`` as a real subprocess, exactly as a user would.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gitfixtures import commit_tree, init_repo
from tests.kbfixtures import KbEnv


@pytest.fixture
def small_repo(tmp_path: Path) -> Path:
    """A one-commit repository."""
    repo = init_repo(tmp_path / "small")
    commit_tree(repo, {"pkg/__init__.py": "", "pkg/a.py": "import os\n"}, "first")
    return repo


def _one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


def test_not_a_repository_exits_2(kb_env: KbEnv, tmp_path: Path) -> None:
    """A directory that is not a git repository: exit 2 and a hint, no traceback."""
    res = kb_env.kb_process("index", tmp_path)
    assert res.code == 2
    assert "not a git repository" in _one_line(res.stderr)


def test_unknown_revision_exits_2(kb_env: KbEnv, small_repo: Path) -> None:
    """An unknown revision: exit 2 naming the revision."""
    res = kb_env.kb_process("index", small_repo, "--sha", "no-such-branch")
    assert res.code == 2
    assert "no-such-branch" in _one_line(res.stderr)


def test_empty_repository_exits_2(kb_env: KbEnv, tmp_path: Path) -> None:
    """A repository without commits: exit 2 saying to commit first."""
    repo = init_repo(tmp_path / "empty")
    res = kb_env.kb_process("index", repo)
    assert res.code == 2
    assert "no commits" in _one_line(res.stderr)


def test_bad_flag_exits_2(kb_env: KbEnv, small_repo: Path) -> None:
    """An unknown flag: exit 2 with one line."""
    res = kb_env.kb_process("index", small_repo, "--no-such-flag")
    assert res.code == 2
    assert "--no-such-flag" in _one_line(res.stderr)


def test_export_of_unindexed_commit_exits_2(kb_env: KbEnv, small_repo: Path) -> None:
    """Exporting a commit that was never indexed: exit 2 telling how to index it."""
    res = kb_env.kb_process("export", small_repo, "--sha", "HEAD")
    assert res.code == 2
    assert "kb index" in _one_line(res.stderr)


def test_unreachable_store_exits_3_without_leaking_the_password(kb_env: KbEnv, small_repo: Path) -> None:
    """An unreachable PostgreSQL: exit 3, one line, the password never printed."""
    url = "postgresql://kb:s3cret-pw@127.0.0.1:9/kb"
    res = kb_env.kb_process("index", small_repo, "--db-url", url)
    assert res.code == 3
    line = _one_line(res.stderr)
    assert "s3cret-pw" not in line
    assert "127.0.0.1" in line


def test_index_then_export_as_a_real_process(kb_env: KbEnv, small_repo: Path) -> None:
    """The happy path through the real console entry point: summary line, then JSONL export."""
    res = kb_env.kb_process("index", small_repo)
    assert res.code == 0, res.stderr
    assert res.stdout.startswith("indexed ")
    records = kb_env.kb_process("export", small_repo).jsonl()
    assert [r["logical_key"] for r in records] == ["import:pkg.a->os"]
    spans = kb_env.kb_process("spans", small_repo).jsonl()
    assert {s["fq_symbol_path"] for s in spans} >= {"<module>", "<import:os>"}
