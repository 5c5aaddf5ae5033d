"""Real git repositories for tests, built deterministically with the git CLI.

A fixture repository is a folder of numbered commit folders (``01-initial/``, ``02-add-feature/``,
...), each holding the FULL tree at that commit; ``build_repo`` turns it into one commit per folder
on branch ``main``. ``commit_tree`` commits an exact tree given in Python, which lets tests build
hostile trees (invalid UTF-8 names, symlinks leaving the repository, NUL bytes in content).

Commits are written with plumbing (``hash-object``, ``update-index --index-info``, ``commit-tree``)
into a private index file, so bare repositories need no detour, file modes and symlinks are exact,
and nothing depends on the caller's git configuration: the environment is fixed (no global or
system config, fixed names, emails and dates: commit N of a branch is dated 2024-01-01 + N hours),
so the same fixture always yields the same shas. In a non-bare repository the work tree and index
are then reset to the new commit, so ordinary git commands keep working on top.

Paths are ``str``; a path that is not valid UTF-8 is written as a surrogate-escaped string
(``"bad\\udcff.py"`` is the bytes ``b"bad\\xff.py"``).
"""

from __future__ import annotations

import atexit
import functools
import re
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

EPOCH = 1704067200  # 2024-01-01T00:00:00Z
COMMIT_MESSAGE_FILE = ".commit-message"
_NUMBERED = re.compile(r"(\d+)[-_ ](.+)")
_REGULAR, _EXECUTABLE, _SYMLINK = "100644", "100755", "120000"


def init_repo(path: Path, *, bare: bool = False) -> Path:
    """Create an empty repository whose unborn branch is ``main``; returns ``path``."""
    path.mkdir(parents=True, exist_ok=True)
    run_git(
        path, "-c", "init.defaultBranch=main", "init", "-q", *(["--bare"] if bare else []), ".", dated=False
    )
    return path


def build_repo(source: Path, dest: Path, *, bare: bool = False) -> list[str]:
    """Turn ``source``'s numbered commit folders into a real repository at ``dest``; returns the shas."""
    if dest.exists() and any(dest.iterdir()):
        raise ValueError(f"{dest} is not empty")
    init_repo(dest, bare=bare)
    shas = []
    for folder in commit_folders(source):
        files, symlinks = read_folder(folder)
        message_file = folder / COMMIT_MESSAGE_FILE
        if message_file.is_file() and not message_file.is_symlink():
            message = message_file.read_text(encoding="utf-8")
        else:
            message = _numbered(folder.name)[1].replace("-", " ")
        shas.append(commit_tree(dest, files, message, symlinks=symlinks, executable=_executables(folder)))
    return shas


def commit_folders(source: Path) -> list[Path]:
    """The numbered commit folders of a fixture, in commit order (by number, then name)."""
    folders = [p for p in source.iterdir() if p.is_dir() and _NUMBERED.fullmatch(p.name)]
    if not folders:
        raise ValueError(f"{source} has no numbered commit folders such as 01-initial/")
    return sorted(folders, key=lambda p: (_numbered(p.name)[0], p.name))


def _numbered(name: str) -> tuple[int, str]:
    """Split a commit folder name ``02-add-feature`` into its number and its message part."""
    match = _NUMBERED.fullmatch(name)
    if match is None:
        raise ValueError(f"{name!r} is not a numbered commit folder such as 01-initial")
    return int(match.group(1)), match.group(2)


def read_folder(folder: Path) -> tuple[dict[str, bytes], dict[str, str]]:
    """The files (path -> bytes) and symlinks (path -> target) of one commit folder, symlinks unfollowed."""
    files: dict[str, bytes] = {}
    symlinks: dict[str, str] = {}
    for item in sorted(folder.rglob("*")):
        rel = item.relative_to(folder).as_posix()
        if rel == COMMIT_MESSAGE_FILE:
            continue
        if item.is_symlink():
            symlinks[rel] = str(item.readlink())
        elif item.is_file():
            files[rel] = item.read_bytes()
    return files, symlinks


def commit_tree(
    repo: Path,
    files: Mapping[str, bytes | str],
    message: str,
    *,
    symlinks: Mapping[str, str] | None = None,
    executable: frozenset[str] = frozenset(),
) -> str:
    """Commit exactly these files and symlinks (replacing the previous tree) on HEAD; returns the sha."""
    entries = [(_SYMLINK, _hash_blob(repo, target), path) for path, target in (symlinks or {}).items()]
    entries += [
        (_EXECUTABLE if path in executable else _REGULAR, _hash_blob(repo, content), path)
        for path, content in files.items()
    ]
    with tempfile.TemporaryDirectory() as scratch:
        index = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
        info = b"".join(f"{mode} {sha}\t".encode() + _raw(path) + b"\0" for mode, sha, path in entries)
        run_git(repo, "update-index", "-z", "--index-info", input=info, extra_env=index, dated=False)
        tree = run_git(repo, "write-tree", extra_env=index, dated=False)
    parent = _head(repo)
    parents = ["-p", parent] if parent else []
    text = message if message.endswith("\n") else message + "\n"
    sha = run_git(repo, "commit-tree", tree, *parents, input=text.encode("utf-8"))
    run_git(repo, "update-ref", "HEAD", sha, dated=False)
    if run_git(repo, "rev-parse", "--is-bare-repository", dated=False) == "false":
        run_git(repo, "reset", "-q", "--hard", "HEAD", dated=False)
    return sha


def run_git(
    repo: Path,
    *args: str,
    input: bytes | None = None,
    extra_env: Mapping[str, str] | None = None,
    dated: bool = True,
) -> str:
    """Run git in ``repo`` with the fixed environment; returns stdout stripped (raises on failure).

    With ``dated`` (the default) the author/committer date is the next commit's deterministic date,
    so ``run_git(repo, "merge", ...)`` or ``run_git(repo, "tag", "-a", ...)`` stay reproducible.
    """
    env = _environment(_commit_count(repo) if dated else 0)
    env.update(extra_env or {})
    done = subprocess.run(
        [_git_executable(), *args], cwd=repo, env=env, input=input, capture_output=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed in {repo}: {done.stderr.decode(errors='replace')}")
    return done.stdout.decode("utf-8", "surrogateescape").strip()


def _environment(count: int) -> dict[str, str]:
    """A git environment that ignores the user's config and dates commit ``count + 1`` deterministically."""
    when = f"{EPOCH + 3600 * (count + 1)} +0000"
    return {
        "HOME": _empty_home(),
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Fixture Author",
        "GIT_AUTHOR_EMAIL": "author@fixtures.invalid",
        "GIT_COMMITTER_NAME": "Fixture Committer",
        "GIT_COMMITTER_EMAIL": "committer@fixtures.invalid",
        "GIT_AUTHOR_DATE": when,
        "GIT_COMMITTER_DATE": when,
        "LC_ALL": "C",
        "TZ": "UTC",
    }


def _commit_count(repo: Path) -> int:
    """How many commits HEAD has (0 when unborn), which fixes the next commit's date."""
    done = subprocess.run(
        [_git_executable(), "rev-list", "--count", "HEAD"],
        cwd=repo,
        env=_environment(0),
        capture_output=True,
        check=False,
    )
    return int(done.stdout) if done.returncode == 0 else 0


def _head(repo: Path) -> str | None:
    """HEAD's sha, or None while the branch is unborn."""
    try:
        return run_git(repo, "rev-parse", "--verify", "-q", "HEAD^{commit}", dated=False)
    except RuntimeError:
        return None


def _hash_blob(repo: Path, content: bytes | str) -> str:
    """Write one blob into the repository's object database."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    return run_git(repo, "hash-object", "-w", "--stdin", input=data, dated=False)


def _executables(folder: Path) -> frozenset[str]:
    """The paths of a commit folder whose files carry an executable bit."""
    return frozenset(
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if p.is_file() and not p.is_symlink() and p.stat().st_mode & stat.S_IXUSR
    )


def _raw(path: str) -> bytes:
    """A test path as the bytes git stores (surrogate escapes become the original bytes)."""
    return path.encode("utf-8", "surrogateescape")


@functools.cache
def _git_executable() -> str:
    """The git binary, looked up once."""
    found = shutil.which("git")
    if found is None:
        raise RuntimeError("the git CLI is needed to build fixture repositories")
    return found


@functools.cache
def _empty_home() -> str:
    """An empty HOME so that no user file (~/.gitconfig, credentials) influences the fixtures."""
    home = tempfile.mkdtemp(prefix="kb-git-home-")
    atexit.register(shutil.rmtree, home, ignore_errors=True)
    return home
