"""Where a repository lives on disk, and the stable key knowbase files its data under.

Every path inside a repository, and every linked worktree of it, shares one *common* git directory
(the one holding ``objects/`` and ``refs/``). The store key is derived from that directory alone, so
``kb index .``, ``kb index ./src`` and ``kb index ../my-worktree`` all land on the same key, while
two clones of the same project (two common directories) get two keys.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pygit2

from kb_assets.core.errors import NotARepositoryError

_SLUG_MAX = 24
_DIGEST_CHARS = 12
_NOT_SLUG = re.compile(r"[^a-z0-9]+")


def discover_git_dir(path: str | Path) -> str:
    """Find the git directory that owns ``path`` (a work tree path, a git dir or a bare repo)."""
    candidate = Path(path)
    try:
        exists = candidate.exists()
    except (OSError, ValueError):  # e.g. a path too long or with a NUL byte
        exists = False
    if not exists:
        raise NotARepositoryError(str(path))
    try:
        found = pygit2.discover_repository(str(candidate.resolve()))
    except (pygit2.GitError, OSError, ValueError):
        found = None
    if found is None:
        raise NotARepositoryError(str(path))
    return found


def common_dir(git_dir: Path) -> Path:
    """The git directory shared by all worktrees (``.git/worktrees/x`` points at it via ``commondir``)."""
    pointer = git_dir / "commondir"
    try:
        relative = pointer.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return git_dir.resolve()
    return (git_dir / relative).resolve()


def repo_key(common: Path) -> str:
    """A store key ``[a-z0-9_]{1,40}``: a readable slug of the repository name + a digest of its location."""
    digest = hashlib.sha256(str(common.resolve()).encode("utf-8", "surrogateescape")).hexdigest()
    return f"{_slug(_repo_name(common))}_{digest[:_DIGEST_CHARS]}"


def _repo_name(common: Path) -> str:
    """The name people call the repository: the work tree dir for ``x/.git``, else the dir sans ``.git``."""
    if common.name == ".git":
        return common.parent.name
    return common.name.removesuffix(".git")


def _slug(name: str) -> str:
    """Lowercase ``[a-z0-9_]`` rendering of a directory name, at most 24 characters, never empty."""
    slug = _NOT_SLUG.sub("_", name.lower()).strip("_")[:_SLUG_MAX].strip("_")
    return slug or "repo"
