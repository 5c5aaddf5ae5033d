"""A repository's remotes, read from its git configuration (never contacted)."""

from __future__ import annotations

import pygit2

from kb_resources.git.repo import GitRepo


def remote_url(repo: GitRepo, name: str = "origin") -> str | None:
    """The URL of remote ``name`` (what ``git remote get-url origin`` prints), or None."""
    try:
        remote = pygit2.Repository(str(repo.git_dir)).remotes[name]
    except (KeyError, ValueError, pygit2.GitError):
        return None
    url = remote.url
    return str(url) if url else None
