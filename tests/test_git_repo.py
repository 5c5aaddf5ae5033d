"""GitRepo on real repositories: revisions, commits, history, branches, keys, bare repos.

The trees themselves (listing `.py` entries, symlinks, submodules, hostile paths, blobs and diffs)
are specified in ``test_git_repo_trees.py``.
"""

from __future__ import annotations

import pickle
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from kb_assets.core.errors import EmptyRepositoryError, NotARepositoryError, UnknownRevisionError
from kb_resources.git.repo import GitRepo
from tests.gitfixtures import build_repo, commit_tree, init_repo, run_git

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "git_basic"


@pytest.fixture(scope="module")
def basic(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """git_basic as a work tree, with an annotated tag on commit 2 and a branch at commit 1 (read-only)."""
    path = tmp_path_factory.mktemp("basic") / "demo"
    shas = build_repo(FIXTURE, path)
    run_git(path, "tag", "-a", "v0.2", shas[1], "-m", "release 0.2")
    run_git(path, "tag", "light", shas[0])
    run_git(path, "branch", "feature", shas[0])
    return path, shas


def test_resolve_accepts_every_kind_of_commitish(basic: tuple[Path, list[str]]) -> None:
    """HEAD, @, branches, annotated and lightweight tags, short shas, ~ and ^ all resolve to full shas."""
    path, shas = basic
    repo = GitRepo.open(path)
    expected = {
        "HEAD": shas[2],
        "@": shas[2],
        "main": shas[2],
        "refs/heads/main": shas[2],
        "feature": shas[0],
        "v0.2": shas[1],
        "refs/tags/v0.2": shas[1],
        "light": shas[0],
        shas[1][:7]: shas[1],
        shas[1]: shas[1],
        "HEAD~1": shas[1],
        "HEAD~2": shas[0],
        f"{shas[2]}^": shas[1],
        "main^^": shas[0],
    }
    assert {rev: repo.resolve(rev) for rev in expected} == expected


@pytest.mark.parametrize(
    "rev", ["nope", "HEAD~5", "HEAD^2", "HEAD^{tree}", "HEAD:app/core.py", "", "  ", "a\x00b", "HEAD..main"]
)
def test_resolve_rejects_what_is_not_a_commit(basic: tuple[Path, list[str]], rev: str) -> None:
    """Unknown names, too-deep ancestry, trees, blobs, ranges and NUL bytes are UnknownRevisionError."""
    with pytest.raises(UnknownRevisionError) as caught:
        GitRepo.open(basic[0]).resolve(rev)
    assert caught.value.revision == rev


def test_resolve_rejects_the_id_of_a_tree(basic: tuple[Path, list[str]]) -> None:
    """A full sha naming a tree (not a commit) is an UnknownRevisionError, also for commit_info."""
    path, shas = basic
    tree = run_git(path, "rev-parse", f"{shas[0]}^{{tree}}")
    repo = GitRepo.open(path)
    with pytest.raises(UnknownRevisionError):
        repo.resolve(tree)
    with pytest.raises(UnknownRevisionError):
        repo.commit_info(tree)


def test_empty_repository_is_reported_for_head(tmp_path: Path) -> None:
    """In a repo with no commits, HEAD-ish revisions raise EmptyRepositoryError, other names do not."""
    repo = GitRepo.open(init_repo(tmp_path / "empty"))
    for rev in ("HEAD", "@", "HEAD~1", "main", "refs/heads/main"):
        with pytest.raises(EmptyRepositoryError):
            repo.resolve(rev)
    with pytest.raises(UnknownRevisionError):
        repo.resolve("feature")
    assert repo.current_branch() is None
    assert repo.branches() == {}


def test_not_a_repository(tmp_path: Path) -> None:
    """A plain directory and a path that does not exist raise NotARepositoryError naming the path."""
    for path in (tmp_path, tmp_path / "does" / "not" / "exist"):
        with pytest.raises(NotARepositoryError) as caught:
            GitRepo.open(path)
        assert caught.value.path == str(path)


def test_open_from_anywhere_inside(basic: tuple[Path, list[str]]) -> None:
    """A subdirectory, a file and the .git dir all open the same repository with the same root and key."""
    path, _ = basic
    top = GitRepo.open(path)
    assert top.root == path.resolve()
    assert top.git_dir == (path / ".git").resolve()
    assert not top.is_bare
    for inside in (path / "app" / "sub", path / "app" / "core.py", path / ".git"):
        other = GitRepo.open(str(inside))
        assert (other.root, other.git_dir, other.key()) == (top.root, top.git_dir, top.key())


def test_commit_info_is_decoded_with_the_committer_timezone(basic: tuple[Path, list[str]]) -> None:
    """commit_info gives sha, tree, parents, a tz-aware committer date, author and the full message."""
    path, shas = basic
    info = GitRepo.open(path).commit_info(shas[1])
    assert info.sha == shas[1]
    assert info.tree_id == run_git(path, "rev-parse", f"{shas[1]}^{{tree}}")
    assert info.parents == (shas[0],)
    assert info.committed_at == datetime(2024, 1, 1, 2, tzinfo=UTC)
    assert info.author == "Fixture Author <author@fixtures.invalid>"
    assert info.message == "add discount\n"
    first = GitRepo.open(path).commit_info(shas[0])
    assert first.parents == ()
    assert first.message == "Initial layout\n\nA package with a subpackage, a script and a README.\n"


def test_commit_time_keeps_its_offset(tmp_path: Path) -> None:
    """A commit made at +05:30 reports committed_at with that offset and the right instant."""
    path = init_repo(tmp_path / "tz")
    commit_tree(path, {"a.py": "x = 1\n"}, "first")
    run_git(
        path,
        "commit",
        "--allow-empty",
        "-q",
        "-m",
        "tz",
        extra_env={"GIT_COMMITTER_DATE": "1704067200 +0530"},
    )
    info = GitRepo.open(path).commit_info(GitRepo.open(path).resolve("HEAD"))
    assert info.committed_at.utcoffset() == timedelta(hours=5, minutes=30)
    assert info.committed_at == datetime(2024, 1, 1, tzinfo=UTC)


def _merge_repo(tmp_path: Path) -> tuple[Path, list[str], str, str]:
    """git_basic plus a side branch from commit 1 merged into main with --no-ff: (path, shas, side, merge)."""
    path = tmp_path / "merge"
    shas = build_repo(FIXTURE, path)
    run_git(path, "checkout", "-q", "-b", "side", shas[0])
    files = {"app/__init__.py": "", "side.py": "SIDE = 1\n"}
    side = commit_tree(path, files, "side work")
    run_git(path, "checkout", "-q", "main")
    run_git(path, "merge", "-q", "--no-ff", "-m", "merge side", "-s", "ours", "side")
    return path, shas, side, run_git(path, "rev-parse", "HEAD")


def test_first_parent_chain_follows_the_mainline_through_a_merge(tmp_path: Path) -> None:
    """From a merge, the chain is merge, then main's commits newest first; the side branch is skipped."""
    path, shas, side, merge = _merge_repo(tmp_path)
    repo = GitRepo.open(path)
    assert repo.commit_info(merge).parents == (shas[2], side)
    assert repo.first_parent_chain(merge, limit=10) == [merge, shas[2], shas[1], shas[0]]
    assert repo.first_parent_chain(merge, limit=2) == [merge, shas[2]]
    assert repo.first_parent_chain(merge, limit=0) == []
    assert repo.first_parent_chain(side, limit=10) == [side, shas[0]]


def test_is_ancestor(tmp_path: Path) -> None:
    """is_ancestor follows all parents, is reflexive, and is false across unrelated branches."""
    path, shas, side, merge = _merge_repo(tmp_path)
    repo = GitRepo.open(path)
    assert repo.is_ancestor(side, merge)
    assert repo.is_ancestor(shas[0], merge)
    assert repo.is_ancestor(merge, merge)
    assert not repo.is_ancestor(merge, side)
    assert not repo.is_ancestor(shas[1], side)


def test_branches_and_current_branch(tmp_path: Path) -> None:
    """branches() maps every local branch to its tip; current_branch() is None once HEAD is detached."""
    path, shas, side, merge = _merge_repo(tmp_path)
    run_git(path, "branch", "topic/nested", shas[1])
    repo = GitRepo.open(path)
    assert repo.branches() == {"main": merge, "side": side, "topic/nested": shas[1]}
    assert repo.current_branch() == "main"
    run_git(path, "checkout", "-q", "--detach", shas[1])
    assert repo.current_branch() is None
    assert repo.resolve("HEAD") == shas[1]


def test_bare_repository_behaves_like_the_work_tree(basic: tuple[Path, list[str]], tmp_path: Path) -> None:
    """The same fixture as a bare repo gives the same shas, commits, files, diffs and branches."""
    path, shas = basic
    bare_path = tmp_path / "demo.git"
    assert build_repo(FIXTURE, bare_path, bare=True) == shas
    bare, work = GitRepo.open(bare_path), GitRepo.open(path)
    assert bare.is_bare
    assert bare.root == bare.git_dir == bare_path.resolve()
    assert bare.resolve("HEAD") == work.resolve("HEAD")
    assert bare.current_branch() == "main"
    for sha in shas:
        assert bare.commit_info(sha) == work.commit_info(sha)
        assert bare.python_files(sha) == work.python_files(sha)
    assert bare.changed_paths(shas[0], shas[2]) == work.changed_paths(shas[0], shas[2])
    assert bare.branches() == {"main": shas[2]}


def test_key_is_stable_inside_a_repo_and_differs_between_repos(
    basic: tuple[Path, list[str]], tmp_path: Path
) -> None:
    """key() matches [a-z0-9_]{1,40}, is shared by subdirs and linked worktrees, and differs per clone."""
    path, shas = basic
    key = GitRepo.open(path).key()
    assert re.fullmatch(r"[a-z0-9_]{1,40}", key)
    assert key.startswith("demo_")
    worktree = tmp_path / "Another Worktree"
    run_git(path, "worktree", "add", "-q", "--detach", str(worktree), shas[0])
    try:
        linked = GitRepo.open(worktree / "app")
        assert linked.root == worktree.resolve()
        assert linked.key() == key
        assert linked.resolve("HEAD") == shas[0]
    finally:
        run_git(path, "worktree", "remove", "--force", str(worktree))
    clone = tmp_path / "Weird Name! With-A-Very-Long-Directory-Name.git"
    build_repo(FIXTURE, clone, bare=True)
    other = GitRepo.open(clone).key()
    assert other != key
    assert re.fullmatch(r"weird_name_with_a_very_l_[0-9a-f]{12}", other)


def test_gitfixtures_are_deterministic(tmp_path: Path) -> None:
    """Building the same fixture twice (work tree or bare) yields identical commit shas."""
    first = build_repo(FIXTURE, tmp_path / "one")
    assert build_repo(FIXTURE, tmp_path / "two") == first
    assert build_repo(FIXTURE, tmp_path / "three", bare=True) == first
    assert len(first) == 3
    assert run_git(tmp_path / "one", "status", "--porcelain") == ""


def test_repo_is_usable_from_threads_and_pickles(basic: tuple[Path, list[str]]) -> None:
    """One GitRepo serves several threads at once, and survives a pickle round trip (process pools)."""
    from concurrent.futures import ThreadPoolExecutor

    path, shas = basic
    repo = GitRepo.open(path)
    expected = [repo.python_files(sha) for sha in shas]
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda i: repo.python_files(shas[i % 3]), range(24)))
    assert results == [expected[i % 3] for i in range(24)]
    clone = pickle.loads(pickle.dumps(repo))
    assert (clone.root, clone.key(), clone.python_files(shas[2])) == (repo.root, repo.key(), expected[2])
