"""What every command needs first: settings, the repository, and the store for it."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any

from kb_assets.core.errors import BadInputError, NotIndexedError, SchemaMismatchError
from kb_assets.core.spans import ParseLimits
from kb_resources.git.repo import GitRepo
from kb_resources.settings import Settings, load_settings
from kb_resources.store import reads
from kb_resources.store.engine import Store, open_store


@dataclass
class Session:
    """An opened repository and its store."""

    settings: Settings
    repo: GitRepo
    store: Store
    runs: tuple[Any, Any] | None = field(default=None, repr=False, compare=False)
    """Dagster's instance and the Definitions this session's runs go through, once opened
    (``runner.instance_and_definitions``; Dagster is imported only when a job runs)."""

    def limits(self) -> ParseLimits:
        """The per-file parse limits of the settings (those a run's resource gives its steps)."""
        return ParseLimits(max_bytes=self.settings.max_file_bytes, timeout_s=self.settings.parse_timeout_s)


def open_session(args: argparse.Namespace, *, read_only: bool = False) -> Session:
    """Open the repository named on the command line and its store (migrated unless read-only)."""
    settings = load_settings().with_db_url(args.db_url)
    repo = GitRepo.open(args.repo)
    try:
        store = open_store(settings, repo.key(), read_only=read_only, migrate=not read_only)
    except SchemaMismatchError as err:
        if read_only and err.found is None:
            raise BadInputError(f"nothing in {repo.root} is indexed yet; run `kb index` first") from None
        raise
    return Session(settings=settings, repo=repo, store=store)


def indexed_sha(session: Session, rev: str | None) -> str:
    """The commit a read command is about: ``rev`` (must be indexed) or the newest indexed commit
    on HEAD's first-parent line."""
    with session.store.engine.connect() as conn:
        published = reads.published_commits(conn)
    if rev is not None:
        sha = session.repo.resolve(rev)
        if sha not in published:
            raise NotIndexedError(sha)
        return sha
    head = session.repo.resolve("HEAD")
    for sha in session.repo.first_parent_chain(head, limit=100_000):
        if sha in published:
            return sha
    raise BadInputError("nothing on this branch is indexed yet; run `kb index` first")
