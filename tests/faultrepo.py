"""The fault suite's shared repository: two small commits and what clean sequential runs publish
for them, built once per test session (modules load this file with ``pytest_plugins``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import PgTestServer
from tests.faultfixtures import Reference, reference, two_commit_repo
from tests.kbfixtures import KbEnv


@pytest.fixture(scope="session")
def fault_repo(
    pg_server: PgTestServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Path, Reference]]:
    """(repository, reference) where ``reference.exports`` holds the first then the second commit."""
    root = tmp_path_factory.mktemp("fault_repo")
    repo, shas = two_commit_repo(root / "repo")
    database = pg_server.create_database()
    clean = KbEnv(home=root / "clean_home", db_url=pg_server.url(database))
    try:
        yield repo, reference(clean, repo, shas)
    finally:
        clean.close()
        pg_server.drop_database(database)
