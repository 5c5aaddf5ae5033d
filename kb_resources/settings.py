"""The one place that reads the environment.

Every other module receives a ``Settings`` value (or a piece of it), so tests and the Dagster code
location can inject configuration without touching ``os.environ``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
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
    llm_provider: str = "anthropic"
    llm_model: str | None = None
    repo: str | None = None
    watch_branches: tuple[str, ...] = ()
    max_catchup: int = 50
    verify_sample: int = 16
    verify_max_files: int = 1000

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
        llm_provider=env.get("KB_LLM_PROVIDER") or "anthropic",
        llm_model=env.get("KB_LLM_MODEL") or None,
        repo=env.get("KB_REPO") or None,
        watch_branches=tuple(b for b in (env.get("KB_WATCH_BRANCHES") or "").split(",") if b),
        max_catchup=int(env.get("KB_MAX_CATCHUP") or 50),
        verify_sample=int(env.get("KB_VERIFY_SAMPLE") or 16),
        verify_max_files=int(env.get("KB_VERIFY_MAX_FILES") or 1000),
    )
