"""The thin Dagster resource around the repository and its knowledge store.

It only carries configuration (so Dagster can show and serialize it) and opens the pure adapters
lazily; engines are cached per process so every asset of a run shares one connection pool.
"""

from __future__ import annotations

import functools
from dataclasses import replace
from pathlib import Path

import dagster as dg
from sqlalchemy import Engine

from kb_assets.core.forked import set_workers
from kb_assets.core.spans import ParseLimits
from kb_resources.embedding.port import Embedder, make_embedder
from kb_resources.git.repo import GitRepo
from kb_resources.settings import Settings, load_settings
from kb_resources.store.engine import Store, open_store

_opened_stores: list[Store] = []


@functools.cache
def _store(settings: Settings, repo_key: str) -> Store:
    store = open_store(settings, repo_key)
    _opened_stores.append(store)
    return store


@functools.cache
def _repo(path: str) -> GitRepo:
    return GitRepo.open(path)


@functools.cache
def _embedder(settings: Settings) -> Embedder:
    return make_embedder(settings)


class KnowbaseResource(dg.ConfigurableResource["KnowbaseResource"]):
    """The git repository being indexed and the PostgreSQL knowledge store it is indexed into."""

    repo: str
    kb_home: str
    dagster_home: str
    db_url: str = ""
    max_file_bytes: int = 5_000_000
    parse_timeout_s: float = 10.0
    workers: int = 0
    watch_branches: str = ""
    verify_sample: int = 16
    verify_max_files: int = 1000
    max_catchup: int = 50
    embed_provider: str = "local"
    embed_model: str = ""
    embed_batch_size: int = 0
    embed_base_url: str = ""

    @classmethod
    def from_settings(cls, settings: Settings, repo: str) -> KnowbaseResource:
        """The resource for ``repo`` configured from knowbase's settings."""
        return cls(
            repo=repo,
            kb_home=str(settings.kb_home),
            dagster_home=str(settings.dagster_home),
            db_url=settings.db_url or "",
            max_file_bytes=settings.max_file_bytes,
            parse_timeout_s=settings.parse_timeout_s,
            workers=settings.workers,
            watch_branches=",".join(settings.watch_branches),
            max_catchup=settings.max_catchup,
            verify_sample=settings.verify_sample,
            verify_max_files=settings.verify_max_files,
            embed_provider=settings.embed_provider,
            embed_model=settings.embed_model or "",
            embed_batch_size=settings.embed_batch_size,
            embed_base_url=settings.embed_base_url or "",
        )

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        """Apply the process-wide part of the configuration: whether resolution may share its
        work with a forked copy (``KB_WORKERS=1``: never; ``kb_assets.core.forked``)."""
        set_workers(self.workers)

    def settings(self) -> Settings:
        """This resource's configuration as plain ``Settings``."""
        return Settings(
            kb_home=Path(self.kb_home),
            dagster_home=Path(self.dagster_home),
            db_url=self.db_url or None,
            max_file_bytes=self.max_file_bytes,
            parse_timeout_s=self.parse_timeout_s,
            workers=self.workers,
            embed_provider=self.embed_provider,
            embed_model=self.embed_model or None,
            embed_batch_size=self.embed_batch_size,
            embed_base_url=self.embed_base_url or None,
        )

    def git(self) -> GitRepo:
        """The repository (opened once per process)."""
        return _repo(self.repo)

    def engine(self) -> Engine:
        """The knowledge store's engine (opened and migrated once per process)."""
        return _store(self.settings(), self.git().key()).engine

    def embedder(self) -> Embedder:
        """The configured embedding provider (one per process; its API key is read from the
        environment here, so it never appears in Dagster's resource config)."""
        return _embedder(replace(self.settings(), embed_api_key=load_settings().embed_api_key))

    def limits(self) -> ParseLimits:
        """Per-file parse limits."""
        return ParseLimits(max_bytes=self.max_file_bytes, timeout_s=self.parse_timeout_s)


def close_cached() -> None:
    """Close every store and repository this process opened through the resource (tests, shutdown)."""
    for store in list(_opened_stores):
        store.close()
    _opened_stores.clear()
    _store.cache_clear()
    _repo.cache_clear()
    _embedder.cache_clear()
