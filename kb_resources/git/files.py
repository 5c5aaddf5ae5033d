"""Reading one non-Python file of a commit by path (repository configuration such as ``.kb/sinks.yaml``).

Like everything else in this package it reads the object database, never the work tree, so what an
indexed commit is configured with is exactly what that commit contains. A path that is absent, a
directory, a symlink or a submodule reads as None; so does a blob larger than ``max_bytes``.
"""

from __future__ import annotations

import pygit2

from kb_assets.core.models import FileMode
from kb_resources.git.repo import GitRepo
from kb_resources.git.tree import file_mode

MAX_CONFIG_BYTES = 1_000_000
"""Largest configuration file read (bigger ones read as absent)."""


def read_path(repo: GitRepo, sha: str, path: str, *, max_bytes: int = MAX_CONFIG_BYTES) -> bytes | None:
    """The bytes of the regular file at ``path`` in commit ``sha``, or None (see the module docstring)."""
    handle = pygit2.Repository(str(repo.git_dir))
    commit = handle.get(repo.resolve(sha))
    if not isinstance(commit, pygit2.Commit):
        return None
    try:
        entry = commit.tree[path]
    except KeyError:
        return None
    if file_mode(entry.filemode) not in (FileMode.REGULAR, FileMode.EXECUTABLE):
        return None
    data = repo.read_blob(str(entry.id))
    return data if len(data) <= max_bytes else None
