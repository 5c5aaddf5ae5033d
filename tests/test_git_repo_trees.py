"""GitRepo's view of trees: `.py` listings, symlinks, submodules, hostile paths, blobs and diffs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pygit2
import pytest

from kb_assets.core.errors import UnknownRevisionError
from kb_assets.core.models import FileEntry, FileMode
from kb_resources.git import repo as repo_module
from kb_resources.git.repo import GitRepo
from kb_resources.git.tree import TreeListing, list_python_files
from tests.gitfixtures import build_repo, commit_tree, init_repo, run_git

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "git_basic"
_GIT_MODES = {"100644": FileMode.REGULAR, "100755": FileMode.EXECUTABLE, "120000": FileMode.SYMLINK}


def _ls_tree(path: Path, sha: str) -> list[tuple[str, str, FileMode]]:
    """What `git ls-tree -r` says the `.py` entries of a commit are: (path, object id, mode)."""
    out = []
    for record in run_git(path, "ls-tree", "-r", "-z", "--full-tree", sha).split("\0"):
        if not record:
            continue
        meta, name = record.split("\t", 1)
        mode, _kind, oid = meta.split(" ")
        if name.endswith(".py"):
            out.append((name, oid, _GIT_MODES.get(mode, FileMode.SUBMODULE)))
    return sorted(out, key=lambda item: item[0].encode("utf-8", "surrogateescape"))


def _listed(entries: tuple[FileEntry, ...]) -> list[tuple[str, str, FileMode]]:
    """The comparable part of python_files' answer."""
    return [(e.path, e.blob_id, e.mode) for e in entries]


@pytest.fixture(scope="module")
def basic(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """git_basic as a work tree (read-only)."""
    path = tmp_path_factory.mktemp("trees") / "demo"
    return path, build_repo(FIXTURE, path)


def test_python_files_equal_git_ls_tree(basic: tuple[Path, list[str]]) -> None:
    """For every commit, python_files lists exactly git's `.py` entries, blob ids, modes and sizes."""
    path, shas = basic
    repo = GitRepo.open(path)
    for sha in shas:
        files = repo.python_files(sha)
        assert _listed(files) == _ls_tree(path, sha)
        for entry in files:
            assert entry.size == int(run_git(path, "cat-file", "-s", entry.blob_id))
    assert [e.path for e in repo.python_files(shas[0])] == [
        "app/__init__.py",
        "app/core.py",
        "app/sub/__init__.py",
        "app/sub/helpers.py",
        "scripts/run.py",
    ]
    assert repo.tree_gaps(shas[0]) == ()


def test_python_files_never_look_at_the_work_tree(tmp_path: Path) -> None:
    """Deleting and rewriting the checked-out files changes nothing: blobs come from the object database."""
    path = tmp_path / "demo"
    shas = build_repo(FIXTURE, path)
    repo = GitRepo.open(path)
    before = repo.python_files(shas[2])
    core = next(e for e in before if e.path == "app/core.py")
    shutil.rmtree(path / "app")
    (path / "scripts" / "run.py").write_text("changed\n")
    (path / "new.py").write_text("untracked\n")
    assert repo.python_files(shas[2]) == before
    assert repo.read_blob(core.blob_id) == (FIXTURE / "03-rename-helpers" / "app" / "core.py").read_bytes()


def test_symlinks_and_submodules_are_reported_not_followed(tmp_path: Path) -> None:
    """Symlinks (to /etc/passwd, outside the repo) and gitlinks are listed with their modes and size 0."""
    path = init_repo(tmp_path / "hostile")
    (tmp_path / "outside.py").write_text("SECRET = 1\n")
    files = {"ok.py": "x = 1\n", "tool.py": "#!/usr/bin/env python\n"}
    links = {"evil.py": "/etc/passwd", "link.py": "../outside.py", "dir.py": "app"}
    first = commit_tree(path, files, "links", symlinks=links, executable=frozenset({"tool.py"}))
    run_git(path, "update-index", "--add", "--cacheinfo", f"160000,{first},sub.py")
    run_git(path, "commit", "-q", "-m", "add a gitlink")
    repo = GitRepo.open(path)
    head = repo.resolve("HEAD")
    entries = {e.path: e for e in repo.python_files(head)}
    assert _listed(repo.python_files(head)) == _ls_tree(path, head)
    assert entries["evil.py"].mode is FileMode.SYMLINK
    assert entries["link.py"].mode is FileMode.SYMLINK
    assert entries["dir.py"].mode is FileMode.SYMLINK
    assert {entries[p].size for p in ("evil.py", "link.py", "dir.py", "sub.py")} == {0}
    assert entries["sub.py"] == FileEntry(path="sub.py", blob_id=first, mode=FileMode.SUBMODULE, size=0)
    assert entries["tool.py"].mode is FileMode.EXECUTABLE
    assert entries["ok.py"].mode is FileMode.REGULAR
    assert repo.read_blob(entries["evil.py"].blob_id) == b"/etc/passwd"  # the link text, not the target


def test_unicode_space_and_undecodable_paths(tmp_path: Path) -> None:
    """Unicode and space paths are listed in UTF-8 byte order; a non-UTF-8 path is a gap, not a crash."""
    path = init_repo(tmp_path / "names")
    files: dict[str, bytes | str] = {
        "dir with space/mod ule.py": "a = 1\n",
        "ünï/cödé.py": "b = 2\n",
        "日本/名前.py": "c = 3\n",
        "Z.py": "d = 4\n",
        "bad\udcff.py": b"e = 5\n",
        "nul.py": b"x = '\x00'\n\xff\xfe",
        "tricky.py/inner.py": "f = 6\n",
        "notes.txt": "not python\n",
    }
    sha = commit_tree(path, files, "names")
    repo = GitRepo.open(path)
    listed = repo.python_files(sha)
    assert [e.path for e in listed] == [
        "Z.py",
        "dir with space/mod ule.py",
        "nul.py",
        "tricky.py/inner.py",
        "ünï/cödé.py",
        "日本/名前.py",
    ]
    assert [(g.path, g.reason) for g in repo.tree_gaps(sha)] == [("bad\\xff.py", "undecodable_path")]
    blobs = {e.path: repo.read_blob(e.blob_id) for e in listed}
    assert blobs["nul.py"] == b"x = '\x00'\n\xff\xfe"
    assert blobs["日本/名前.py"] == b"c = 3\n"
    later = commit_tree(path, {**files, "日本/名前.py": "c = 4\n"}, "edit")
    assert repo.changed_paths(sha, later) == frozenset({"日本/名前.py"})


def test_read_blob_rejects_what_is_not_a_blob(basic: tuple[Path, list[str]]) -> None:
    """read_blob gives a blob's exact bytes, UnknownRevisionError for trees, commits and unknown ids."""
    path, shas = basic
    repo = GitRepo.open(path)
    helpers = next(e for e in repo.python_files(shas[0]) if e.path == "app/sub/helpers.py")
    assert (
        repo.read_blob(helpers.blob_id)
        == (FIXTURE / "01-initial" / "app" / "sub" / "helpers.py").read_bytes()
    )
    tree = run_git(path, "rev-parse", f"{shas[0]}^{{tree}}")
    for bad in (tree, shas[0], "0" * 40, "not-an-id"):
        with pytest.raises(UnknownRevisionError):
            repo.read_blob(bad)


def test_changed_paths_cover_adds_edits_deletes_and_both_sides_of_renames(
    basic: tuple[Path, list[str]],
) -> None:
    """changed_paths lists `.py` paths only; a rename contributes its old and its new path."""
    path, shas = basic
    repo = GitRepo.open(path)
    assert repo.changed_paths(shas[0], shas[1]) == {"app/core.py", "app/discount.py"}  # README change ignored
    assert repo.changed_paths(shas[1], shas[2]) == {"app/core.py", "app/sub/helpers.py", "app/sub/money.py"}
    assert repo.changed_paths(shas[2], shas[0]) == {
        "app/core.py",
        "app/discount.py",
        "app/sub/helpers.py",
        "app/sub/money.py",
    }
    assert repo.changed_paths(shas[2], shas[2]) == frozenset()
    assert repo.changed_paths("HEAD~2", "HEAD") == repo.changed_paths(shas[0], shas[2])


def test_changed_paths_see_mode_and_type_changes(tmp_path: Path) -> None:
    """A file turned executable or into a symlink counts as changed; unrelated paths do not."""
    path = init_repo(tmp_path / "modes")
    base = commit_tree(path, {"a.py": "x\n", "b.py": "y\n", "c.py": "z\n"}, "base")
    after = commit_tree(
        path,
        {"a.py": "x\n", "c.py": "z\n"},
        "modes",
        symlinks={"b.py": "a.py"},
        executable=frozenset({"a.py"}),
    )
    assert GitRepo.open(path).changed_paths(base, after) == {"a.py", "b.py"}


def test_a_listing_is_made_once_per_commit_for_every_repository_object(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two ``GitRepo`` objects of one repository (an index run's session and its pipeline) list a
    commit's tree once between them; another commit is listed on its own, and a clone's object
    of the same commit gets the same listing."""
    repo = init_repo(tmp_path / "r")
    first = commit_tree(repo, {"a.py": "x = 1\n"}, "first")
    second = commit_tree(repo, {"a.py": "x = 1\n", "b.py": "y = 2\n"}, "second")
    made: list[str] = []

    def listing(odb: pygit2.Odb, tree: pygit2.Tree) -> TreeListing:
        made.append(str(tree.id))
        return list_python_files(odb, tree)

    monkeypatch.setattr(repo_module, "_listings", {})
    monkeypatch.setattr(repo_module, "list_python_files", listing)
    one, two = GitRepo.open(repo), GitRepo.open(repo)
    assert [f.path for f in one.python_files(second)] == ["a.py", "b.py"]
    assert two.python_files(second) == one.python_files(second)
    assert [f.path for f in two.python_files(first)] == ["a.py"]
    assert len(made) == 2
    clone = tmp_path / "clone"
    run_git(tmp_path, "clone", "-q", str(repo), str(clone))
    assert GitRepo.open(clone).python_files(second) == one.python_files(second)
    assert len(made) == 2
