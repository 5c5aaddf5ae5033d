"""``bench/run.py``'s cached corpus is the sdist's own tree at every run: the commits a run makes
on top of it (and anything a killed run left in the tree) are gone when the next run takes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmodules import bench_module


def test_a_cached_corpus_is_taken_back_to_its_sdist_commit(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    run = bench_module("run", monkeypatch)
    repo = tmp_path / "lib-1.0"
    (repo / "lib").mkdir(parents=True)
    (repo / "lib" / "core.py").write_text("def f():\n    return 1\n" + "# padding\n" * 300)
    monkeypatch.setenv("GIT_AUTHOR_NAME", "bench")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "bench@example.invalid")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "bench")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "bench@example.invalid")
    run.git(repo, "init", "-q", "-b", "main")
    run.git(repo, "add", "-A")
    run.git(repo, "commit", "-q", "-m", "lib==1.0 sdist")
    sdist = run.git(repo, "rev-parse", "HEAD")
    files = run.git(repo, "ls-files")
    run.one_file_commit(repo, 1)
    run.new_file_commit(repo, 1)
    run.git(repo, "checkout", "-q", "-b", "elsewhere")
    (repo / "lib" / "left_by_a_killed_run.py").write_text("x = 1\n")
    (repo / "lib" / "core.py").write_text("changed, not committed\n")
    assert run.git(repo, "rev-parse", "HEAD") != sdist

    assert run.corpus(tmp_path, "lib==1.0") == repo
    assert run.git(repo, "rev-parse", "HEAD") == sdist
    assert run.git(repo, "rev-parse", "--abbrev-ref", "HEAD") == "main"
    assert run.git(repo, "ls-files") == files
    assert run.git(repo, "status", "--porcelain", "--ignored") == ""
