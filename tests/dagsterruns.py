"""Materializing assets of an indexed commit outside ``kb index``, as the Dagster UI would: on the
repository's persistent instance, through the Definitions' implicit asset job."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from kb_assets.cli.instance import open_instance
from kb_assets.definitions import build_definitions
from kb_resources.git.repo import GitRepo
from kb_resources.settings import load_settings
from kb_resources.store.engine import open_store
from tests.kbfixtures import KbEnv


def materialize_alone(
    env: KbEnv, repo: Path, sha: str, asset: str, monkeypatch: pytest.MonkeyPatch
) -> dg.ExecuteInProcessResult:
    """Materialize only ``asset`` (with the checks Dagster selects with it) of ``sha``; the run's
    result, failed or not (``raise_on_error=False``)."""
    for key, value in env.environ.items():
        monkeypatch.setenv(key, value)
    settings = load_settings(env.environ)
    with open_store(settings, GitRepo.open(repo).key()) as store:
        instance = open_instance(settings, store)
        try:
            defs = build_definitions(settings.with_db_url(store.real_url), repo=str(repo))
            return defs.resolve_implicit_global_asset_job_def().execute_in_process(
                partition_key=sha,
                instance=instance,
                asset_selection=[dg.AssetKey(asset)],
                raise_on_error=False,
            )
        finally:
            instance.dispose()
