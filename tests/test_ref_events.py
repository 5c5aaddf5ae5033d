"""``RefEvents``: a watch's wait ends as a branch moves, however git moves it (a loose ref, a new
directory for a ``/`` in a branch name, ``packed-refs``, a linked worktree), and not for a lock
file alone; without inotify it only sleeps."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kb_resources.git.ref_events import RefEvents
from kb_resources.git.repo import GitRepo
from tests.gitfixtures import commit_tree, init_repo, run_git

QUIET_S = 0.2
"""A wait in which nothing happens to the repository: it must run out (return False)."""
MOVE_S = 60.0
"""A wait that a ref change must end (return True); it runs out only if the change was missed."""


def _settled(moves: RefEvents) -> None:
    """Wait until the events of what the test did before have all been read."""
    while moves.wait(QUIET_S):
        pass


def _repo(tmp_path: Path) -> tuple[Path, str, str]:
    repo = init_repo(tmp_path / "r")
    first = commit_tree(repo, {"a.py": "x = 1\n"}, "first")
    second = commit_tree(repo, {"a.py": "x = 2\n"}, "second")
    return repo, first, second


def test_a_branch_moved_ends_the_wait_and_a_quiet_repository_does_not(tmp_path: Path) -> None:
    repo, first, _ = _repo(tmp_path)
    with RefEvents(repo / ".git") as moves:
        assert moves.watching
        assert not moves.wait(QUIET_S)
        run_git(repo, "update-ref", "refs/heads/main", first, dated=False)
        assert moves.wait(MOVE_S)
        _settled(moves)
        (repo / ".git" / "refs" / "heads" / "main.lock").write_text(first)
        (repo / ".git" / "refs" / "heads" / "main.lock").unlink()
        assert not moves.wait(QUIET_S)


def test_a_branch_in_a_new_directory_is_watched_from_its_creation_on(tmp_path: Path) -> None:
    repo, first, second = _repo(tmp_path)
    with RefEvents(repo / ".git") as moves:
        run_git(repo, "branch", "feature/x", first, dated=False)
        assert moves.wait(MOVE_S)
        _settled(moves)
        run_git(repo, "update-ref", "refs/heads/feature/x", second, dated=False)
        assert moves.wait(MOVE_S)


def test_a_packed_branch_deleted_rewrites_packed_refs_which_ends_the_wait(tmp_path: Path) -> None:
    repo, first, _ = _repo(tmp_path)
    run_git(repo, "branch", "old", first, dated=False)
    run_git(repo, "pack-refs", "--all", dated=False)
    assert not (repo / ".git" / "refs" / "heads" / "old").exists()
    with RefEvents(repo / ".git") as moves:
        run_git(repo, "branch", "-D", "old", dated=False)
        assert moves.wait(MOVE_S)


def test_a_commit_in_a_linked_worktree_ends_a_wait_on_the_main_one(tmp_path: Path) -> None:
    repo, _, _ = _repo(tmp_path)
    run_git(repo, "worktree", "add", "-q", "-b", "side", str(tmp_path / "wt"), dated=False)
    worktree = GitRepo.open(tmp_path / "wt").git_dir
    with RefEvents(worktree) as from_worktree, RefEvents(GitRepo.open(repo).git_dir) as moves:
        assert from_worktree.common == moves.common
        _settled(moves)
        run_git(tmp_path / "wt", "commit", "-q", "--allow-empty", "-m", "on side")
        assert moves.wait(MOVE_S)
        assert from_worktree.wait(MOVE_S)


def test_without_inotify_the_wait_only_sleeps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo, first, _ = _repo(tmp_path)
    monkeypatch.setattr(sys, "platform", "darwin")
    with RefEvents(repo / ".git") as moves:
        assert not moves.watching
        run_git(repo, "update-ref", "refs/heads/main", first, dated=False)
        assert not moves.wait(QUIET_S)


def test_events_the_kernel_dropped_end_the_wait(tmp_path: Path) -> None:
    """More events than the kernel queues (lock files only, here) overflow its queue; a ref move
    may have been among those dropped, so the wait ends."""
    repo, _, _ = _repo(tmp_path)
    queued = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    heads = repo / ".git" / "refs" / "heads"
    with RefEvents(repo / ".git") as moves:
        for n in range(queued // 2 + 1):  # a creation and a close-after-write each
            (heads / f"x{n}.lock").write_bytes(b"")
        assert moves.wait(MOVE_S)
