"""Shared fixtures: a PostgreSQL server for the whole session, a fresh migrated store per test.

``KB_TEST_DB_URL`` (a URL on a server where the user may create databases) selects an external
server; otherwise the session starts the embedded one in a temporary directory and checks at the
end that it really stopped. Nothing here reads or writes the user's real ``KB_HOME``.
"""

from __future__ import annotations

import itertools
import os
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import URL

from kb_resources.settings import Settings
from kb_resources.store import databases
from kb_resources.store.embedded import EmbeddedServer
from kb_resources.store.engine import Store, open_store
from kb_resources.store.target import parse_store_url
from tests.kbfixtures import KbEnv
from tests.storefixtures import live_postmasters

SettingsFactory = Callable[..., Settings]

_database_names = itertools.count()


@dataclass(frozen=True)
class PgTestServer:
    """The session's PostgreSQL server and how to make throwaway databases on it."""

    admin_url: URL
    embedded: EmbeddedServer | None

    def url(self, database: str) -> str:
        """A psycopg 3 URL (password included) for ``database`` on this server."""
        return self.admin_url.set(database=database).render_as_string(hide_password=False)

    def create_database(self) -> str:
        """Create an empty database with a name unique to this session; return the name."""
        name = f"kbtest_{os.getpid()}_{next(_database_names)}"
        databases.ensure_database(self.admin_url, name, create=True)
        return name

    def drop_database(self, name: str) -> None:
        """Drop a database made by ``create_database`` (closing whatever still uses it)."""
        databases.drop_database(self.admin_url, name)


def pytest_configure(config: pytest.Config) -> None:
    """Give SIGINT its default action back when this run inherited it ignored (a non-interactive
    shell starts a background job so): the ``kb`` processes the tests spawn would inherit the
    ignore, and the tests that stop ``kb watch`` with SIGINT would wait for it forever. A handled
    signal is reset to its default in an exec'd child, so theirs is Python's usual handler."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PgTestServer]:
    """The PostgreSQL server of the test session (external via KB_TEST_DB_URL, else embedded)."""
    external = os.environ.get("KB_TEST_DB_URL")
    if external:
        yield PgTestServer(parse_store_url(external), None)
        return
    pgdata = tmp_path_factory.mktemp("pg") / "pgdata"
    server = EmbeddedServer.start(pgdata)
    try:
        yield PgTestServer(parse_store_url(server.uri("postgres")), server)
    finally:
        server.release()
    left = live_postmasters(pgdata)
    assert not left, f"the session's embedded PostgreSQL is still running: {left}"


@pytest.fixture
def settings_factory(tmp_path: Path) -> SettingsFactory:
    """Build ``Settings`` rooted in the test's temporary directory; keywords override fields."""

    def build(**overrides: Any) -> Settings:
        kb_home = Path(overrides.pop("kb_home", tmp_path / "kb_home"))
        dagster_home = Path(overrides.pop("dagster_home", kb_home / "dagster"))
        return Settings(kb_home=kb_home, dagster_home=dagster_home, **overrides)

    return build


@pytest.fixture
def blank_database(pg_server: PgTestServer) -> Iterator[str]:
    """The URL of a brand-new, empty (never migrated) database, dropped after the test."""
    name = pg_server.create_database()
    try:
        yield pg_server.url(name)
    finally:
        pg_server.drop_database(name)


@pytest.fixture
def store(blank_database: str, settings_factory: SettingsFactory) -> Iterator[Store]:
    """A fresh store migrated to head through ``open_store``, on its own database."""
    opened = open_store(settings_factory(db_url=blank_database), "test")
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def kb_env(blank_database: str, tmp_path: Path) -> Iterator[KbEnv]:
    """An isolated knowbase environment (own KB_HOME, DAGSTER_HOME and database) for one test."""
    env = KbEnv(home=tmp_path / "kb_home", db_url=blank_database)
    try:
        yield env
    finally:
        env.close()


@pytest.fixture
def other_env(pg_server: PgTestServer, tmp_path: Path) -> Iterator[KbEnv]:
    """A second, independent knowbase environment (own database and KB_HOME)."""
    name = pg_server.create_database()
    env = KbEnv(home=tmp_path / "other_home", db_url=pg_server.url(name))
    try:
        yield env
    finally:
        env.close()
        pg_server.drop_database(name)
