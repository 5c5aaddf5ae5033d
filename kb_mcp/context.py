"""What the server holds for its whole life: the repository, the read-only store and its caches.

This module stays light (nothing heavy is imported until ``open_context`` runs), so that the MCP
server can answer ``initialize`` while the store is still being opened (see ``kb_mcp.launch``).
Tools reach the context through the lifespan (``ctx.request_context.lifespan_context``), typed as
a ``ContextSource``: an opened ``ServeContext`` is its own source.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import sqlalchemy as sa

    from kb_mcp.branch import BranchTracker, BranchView
    from kb_mcp.snapshots import SnapshotCache, SnapshotIndex
    from kb_resources.git.repo import GitRepo
    from kb_resources.settings import Settings
    from kb_resources.store.engine import Store

QueryEmbedder = Callable[[str], Sequence[float]]
"""Turns a search query into a vector of one stored embedding model."""

EmbedderLookup = Callable[[str], QueryEmbedder | None]
"""The query embedder of a stored model id (None when this process cannot run that model);
``kb_mcp.embedders.QueryEmbedders`` is the real one."""


class ContextSource(Protocol):
    """Whatever hands the tools their ``ServeContext`` (waiting for it while it opens)."""

    def get(self) -> ServeContext:
        """The opened context (raises the opening's error if it could not be opened)."""
        ...


@dataclass
class ServeContext:
    """The repository, its read-only store and the per-process caches the tools share."""

    repo: GitRepo
    store: Store
    snapshots: SnapshotCache
    branch: BranchTracker
    query_embedders: EmbedderLookup | None = None

    def get(self) -> ServeContext:
        """An opened context is its own source."""
        return self

    @contextmanager
    def reading(self, rev: str | None = None) -> Iterator[tuple[sa.Connection, str, BranchView]]:
        """A connection, the indexed commit a request is about (``rev`` or the branch's newest) and
        the branch view; the transaction is read-only and rolled back at the end."""
        with self.store.engine.connect() as conn:
            sha, view = self.branch.resolve(conn, rev)
            yield conn, sha, view

    def index(self, conn: sa.Connection, sha: str) -> SnapshotIndex:
        """The in-memory index of the snapshot of ``sha`` (loaded once per commit)."""
        return self.snapshots.get(conn, sha)

    def warm(self) -> None:
        """Load the branch's newest snapshot ahead of the first request."""
        with self.store.engine.connect() as conn:
            newest = self.branch.view(conn).newest
            if newest is not None:
                self.snapshots.get(conn, newest)

    def close(self) -> None:
        """Give back the store (the embedded server stops when its last user leaves)."""
        self.store.close()


def open_context(repo_path: str | Path, settings: Settings) -> ServeContext:
    """Open the repository and its store read-only; refuse a store whose schema is not at head."""
    from kb_assets.core.errors import BadInputError, SchemaMismatchError
    from kb_mcp.branch import BranchTracker
    from kb_mcp.embedders import QueryEmbedders
    from kb_mcp.snapshots import SnapshotCache
    from kb_resources.git.repo import GitRepo
    from kb_resources.store.engine import open_store

    repo = GitRepo.open(repo_path)
    try:
        store = open_store(settings, repo.key(), read_only=True, migrate=False)
    except SchemaMismatchError as err:
        if err.found is None:
            raise BadInputError(f"nothing in {repo.root} is indexed yet; run `kb index` first") from None
        raise
    return ServeContext(
        repo=repo,
        store=store,
        snapshots=SnapshotCache(),
        branch=BranchTracker(repo),
        query_embedders=QueryEmbedders(settings),
    )
