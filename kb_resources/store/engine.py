"""Opening the knowledge store: which server, which database, and a schema this program can use.

``open_store`` is the one entry point. With ``settings.db_url`` it uses that database as is;
otherwise it starts the embedded PostgreSQL under ``KB_HOME/pg`` and keeps one database per
repository (``kb_<repo_key>``), created on first use. Writers migrate to head; read-only users
(the MCP server) refuse anything but head and get connections that cannot write.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from types import TracebackType

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import URL, make_url

from kb_assets.core.errors import SchemaMismatchError, StoreUnavailableError
from kb_resources.settings import Settings
from kb_resources.store import databases, revision
from kb_resources.store.embedded import EmbeddedServer
from kb_resources.store.target import dagster_url, display, one_line, parse_store_url, with_options

DAGSTER_SCHEMA = "dagster"
READ_ONLY_OPTION = "-cdefault_transaction_read_only=on"

EMBEDDED_STORE_OPTION = "-cbackend_flush_after=512kB"
"""The knowledge store's sessions on the embedded server ask the kernel to start writing out what
they write every 512 kB. A bulk load (``COPY``) writes its own dirty pages from a small ring of
buffers, into the kernel's cache, and the server stops at the end of each command with a
checkpoint that must sync every file they touched: after a full index of Django (553 files),
0.26-0.27 s of sync before ``kb index`` could exit, 0.07-0.09 s with this (three runs each; the
same pages are written either way, only sooner). Only for the embedded server, which knowbase
stops; a server named by ``KB_DB_URL`` is its administrator's to tune."""
CONNECT_TIMEOUT_S = 10
_REPO_KEY = re.compile(r"^[a-z0-9_]{1,40}$")


class Store:
    """An open knowledge store: an Engine on one database, plus what it takes to close it."""

    def __init__(
        self, engine: sa.Engine, *, read_only: bool, server: EmbeddedServer | None, url: URL | None = None
    ) -> None:
        self.engine = engine
        self.read_only = read_only
        self.url = display(engine.url)
        """The database URL for display (password masked)."""
        self._server = server
        self._url = url or engine.url  # without the read-only option, which Dagster must not inherit

    @property
    def database(self) -> str:
        """The name of the database this store lives in."""
        return str(self.engine.url.database)

    @property
    def real_url(self) -> str:
        """The full database URL (password included) for handing to a child process or resource."""
        return self._url.render_as_string(hide_password=False)

    def dagster_storage_url(self) -> str:
        """A psycopg2 URL of this database confined to the ``dagster`` schema, for dagster-postgres.

        Creates the schema when missing (it is Dagster's, not a migration's); a read-only store
        only hands out the URL.
        """
        if not self.read_only:
            databases.ensure_schema(self.engine, DAGSTER_SCHEMA)
        if self._server is not None:
            return self._server.psycopg2_uri(self.database, search_path=DAGSTER_SCHEMA)
        return dagster_url(self._url, DAGSTER_SCHEMA)

    def close(self) -> None:
        """Close every connection and give back the embedded server (it stops when nobody is left)."""
        self.engine.dispose()
        if self._server is not None:
            self._server.release()
            self._server = None

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def open_store(settings: Settings, repo_key: str, *, read_only: bool = False, migrate: bool = True) -> Store:
    """Open the store for one repository, ready to use (see the module docstring).

    ``read_only`` stores refuse a schema that is not exactly at head and cannot write;
    ``migrate=False`` skips migrating (a newer schema is still refused), for callers that only probe.
    Raises ``StoreUnavailableError`` or ``SchemaMismatchError``; the caller must ``close()`` the store.
    """
    if not _REPO_KEY.match(repo_key):
        raise ValueError(f"repo_key must match {_REPO_KEY.pattern}, got {repo_key!r}")
    server: EmbeddedServer | None = None
    if settings.db_url:
        url = parse_store_url(settings.db_url)
    else:
        server = _start_embedded(settings.embedded_pgdata)
        url = with_options(make_url(server.uri(f"kb_{repo_key}")), EMBEDDED_STORE_OPTION)
    try:
        return _open(url, server, read_only=read_only, migrate=migrate)
    except BaseException:
        if server is not None:
            server.release()
        raise


def _open(url: URL, server: EmbeddedServer | None, *, read_only: bool, migrate: bool) -> Store:
    """Create the embedded database if needed, connect, and settle the schema question."""
    if server is not None:
        admin = url.set(database="postgres")
        exists = databases.ensure_database(admin, str(url.database), create=not read_only)
        if not exists:
            raise SchemaMismatchError(None, revision.head_revision(), newer=False)
    engine = create_store_engine(url, read_only=read_only)
    try:
        _settle_schema(engine, read_only=read_only, migrate=migrate)
    except BaseException:
        engine.dispose()
        raise
    return Store(engine, read_only=read_only, server=server, url=url)


def create_store_engine(url: URL, *, read_only: bool = False) -> sa.Engine:
    """An Engine on ``url``; every connection of a read-only one starts its transactions read-only."""
    if read_only:
        url = with_options(url, READ_ONLY_OPTION)
    connect_args: dict[str, object] = {"connect_timeout": CONNECT_TIMEOUT_S, "application_name": "knowbase"}
    return sa.create_engine(url, connect_args=connect_args, pool_pre_ping=True)


def _settle_schema(engine: sa.Engine, *, read_only: bool, migrate: bool) -> None:
    """Check the server is reachable and the schema usable; migrate to head when allowed."""
    target = display(engine.url)
    try:
        with engine.connect() as conn:
            if read_only:
                revision.require_head(conn)
                return
            found = revision.check_not_newer(conn)
            if not migrate or found == revision.head_revision():
                return
            databases.require_vector(conn, target)
        revision.migrate_to_head(engine)
    except sa_exc.OperationalError as exc:
        raise StoreUnavailableError(target, one_line(exc, engine.url.password)) from None
    except sa_exc.ProgrammingError as exc:
        reason = one_line(exc, engine.url.password)
        raise StoreUnavailableError(
            target, f"{reason} (the store needs CREATE rights and pgvector)"
        ) from None


def _start_embedded(pgdata: Path) -> EmbeddedServer:
    """Start the embedded server, turning its failures into ``StoreUnavailableError``."""
    try:
        return EmbeddedServer.start(pgdata)
    except (OSError, RuntimeError, subprocess.SubprocessError, AssertionError) as exc:
        raise StoreUnavailableError(
            f"embedded PostgreSQL in {pgdata}", f"{one_line(exc)}; its log is {pgdata / 'log'}"
        ) from None
