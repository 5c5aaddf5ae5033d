"""The one place that reads the environment.

Every other module receives a ``Settings`` value (or a piece of it), so tests and the Dagster code
location can inject configuration without touching ``os.environ``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import platformdirs

DEFAULT_MAX_FILE_BYTES = 5_000_000
DEFAULT_PARSE_TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True)
class Settings:
    """Configuration of one knowbase process."""

    kb_home: Path
    dagster_home: Path
    db_url: str | None = None
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    parse_timeout_s: float = DEFAULT_PARSE_TIMEOUT_S
    workers: int = 0
    embed_provider: str = "local"
    embed_model: str | None = None
    embed_batch_size: int = 0
    """Texts the embedder takes at once (``KB_EMBED_BATCH``); 0: the provider's own default."""
    embed_api_key: str | None = field(default=None, repr=False)
    embed_base_url: str | None = None
    llm_provider: str = "anthropic"
    llm_model: str | None = None
    llm_concurrency: int = 4
    llm_max_tokens: int = 1024
    llm_max_retries: int = 5
    llm_timeout_s: float = 120.0
    llm_price: str | None = None
    llm_stub: str = ""
    github_api_url: str = "https://api.github.com"
    github_token: str | None = field(default=None, repr=False, compare=False)
    repo: str | None = None
    watch_branches: tuple[str, ...] = ()
    max_catchup: int = 50
    verify_sample: int = 16
    verify_max_files: int = 1000

    @property
    def embedded_pgdata(self) -> Path:
        """The embedded PostgreSQL's data directory (the default store when ``db_url`` is None)."""
        return self.kb_home / "pg"

    def with_db_url(self, db_url: str | None) -> Settings:
        """Return a copy that uses ``db_url`` when one is given (the ``--db-url`` flag wins)."""
        return replace(self, db_url=db_url) if db_url else self


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Read knowbase's settings from the environment (``os.environ`` unless given)."""
    env = os.environ if environ is None else environ
    kb_home = Path(env.get("KB_HOME") or platformdirs.user_data_dir("kb", appauthor=False)).expanduser()
    dagster_home = Path(env.get("DAGSTER_HOME") or kb_home / "dagster").expanduser()
    return Settings(
        kb_home=kb_home,
        dagster_home=dagster_home,
        db_url=env.get("KB_DB_URL") or None,
        max_file_bytes=int(env.get("KB_MAX_FILE_BYTES") or DEFAULT_MAX_FILE_BYTES),
        parse_timeout_s=float(env.get("KB_PARSE_TIMEOUT") or DEFAULT_PARSE_TIMEOUT_S),
        workers=int(env.get("KB_WORKERS") or 0),
        embed_provider=env.get("KB_EMBED_PROVIDER") or "local",
        embed_model=env.get("KB_EMBED_MODEL") or None,
        embed_batch_size=int(env.get("KB_EMBED_BATCH") or 0),
        embed_api_key=env.get("KB_EMBED_API_KEY") or env.get("OPENAI_API_KEY") or None,
        embed_base_url=env.get("KB_EMBED_BASE_URL") or env.get("OPENAI_BASE_URL") or None,
        llm_provider=env.get("KB_LLM_PROVIDER") or "anthropic",
        llm_model=env.get("KB_LLM_MODEL") or None,
        llm_concurrency=int(env.get("KB_LLM_CONCURRENCY") or 4),
        llm_max_tokens=int(env.get("KB_LLM_MAX_TOKENS") or 1024),
        llm_max_retries=int(env.get("KB_LLM_MAX_RETRIES") or 5),
        llm_timeout_s=float(env.get("KB_LLM_TIMEOUT") or 120.0),
        llm_price=env.get("KB_LLM_PRICE") or None,
        llm_stub=env.get("KB_LLM_STUB") or "",
        github_api_url=env.get("KB_GITHUB_API_URL") or "https://api.github.com",
        github_token=env.get("GITHUB_TOKEN") or None,
        repo=env.get("KB_REPO") or None,
        watch_branches=tuple(b for b in (env.get("KB_WATCH_BRANCHES") or "").split(",") if b),
        max_catchup=int(env.get("KB_MAX_CATCHUP") or 50),
        verify_sample=int(env.get("KB_VERIFY_SAMPLE") or 16),
        verify_max_files=int(env.get("KB_VERIFY_MAX_FILES") or 1000),
    )
