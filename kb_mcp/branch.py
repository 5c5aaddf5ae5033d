"""Which commits "the branch" means: the published commits on HEAD's first-parent line.

Freshness and every default ``sha`` are relative to the newest indexed commit of the branch the
repository is on. The view is recomputed when HEAD moves or a new snapshot is published (both are
cheap to detect: one ref lookup and one small query), so a server left running while ``kb watch``
indexes keeps answering about the newest knowledge.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from kb_assets.core.errors import BadInputError, KbError
from kb_mcp.errors import NothingIndexedError, NotIndexedCommitError
from kb_resources.git.repo import GitRepo
from kb_resources.store import reads

CHAIN_LIMIT = 100_000
MAX_REV_CHARS = 256
RECHECK_S = 1.0


@dataclass(frozen=True, slots=True)
class BranchView:
    """HEAD, its branch and the published commits on its first-parent line, newest first."""

    branch: str | None
    head: str | None
    chain: tuple[str, ...]
    published: frozenset[str]

    @property
    def newest(self) -> str | None:
        """The newest indexed commit of the branch (what "current" is measured against)."""
        return self.chain[0] if self.chain else None


def _view(repo: GitRepo, head: str | None, published: Mapping[str, datetime]) -> BranchView:
    """Walk HEAD's first-parent line and keep the published commits, in order."""
    chain: tuple[str, ...] = ()
    if head is not None:
        chain = tuple(sha for sha in repo.first_parent_chain(head, limit=CHAIN_LIMIT) if sha in published)
    if not chain and published:  # HEAD's line has nothing indexed: fall back to the newest snapshot
        chain = (max(published, key=lambda sha: (published[sha], sha)),)
    return BranchView(repo.current_branch(), head, chain, frozenset(published))


class BranchTracker:
    """Caches the branch view until HEAD or the set of published commits changes (thread-safe).

    Both are checked at most once per ``RECHECK_S`` seconds, so a burst of requests costs one
    check; a commit published meanwhile is seen by the requests after that.
    """

    def __init__(self, repo: GitRepo) -> None:
        self._repo = repo
        self._lock = threading.Lock()
        self._key: tuple[object, ...] | None = None
        self._view: BranchView | None = None
        self._checked = -RECHECK_S

    def view(self, conn: sa.Connection) -> BranchView:
        """The branch as it is now (as of at most ``RECHECK_S`` seconds ago)."""
        with self._lock:
            if self._view is not None and time.monotonic() - self._checked < RECHECK_S:
                return self._view
        try:
            head: str | None = self._repo.resolve("HEAD")
        except KbError:  # an empty repository, or a HEAD that names nothing
            head = None
        published = reads.published_commits(conn)
        key = (head, len(published), max(published.values(), default=None))
        with self._lock:
            if self._view is None or key != self._key:
                self._view, self._key = _view(self._repo, head, published), key
            self._checked = time.monotonic()
            return self._view

    def resolve(self, conn: sa.Connection, rev: str | None) -> tuple[str, BranchView]:
        """The indexed commit a request is about (``rev``, else the branch's newest) and the view."""
        view = self.view(conn)
        if rev is None or not rev.strip():
            if view.newest is None:
                raise NothingIndexedError(str(self._repo.root))
            return view.newest, view
        rev = rev.strip()
        if len(rev) > MAX_REV_CHARS:
            raise BadInputError(f"sha is longer than {MAX_REV_CHARS} characters; give a commit sha or ref")
        sha = self._repo.resolve(rev)
        if sha not in view.published:
            raise NotIndexedCommitError(rev, sha, [s[:12] for s in view.chain[:5]])
        return sha, view
