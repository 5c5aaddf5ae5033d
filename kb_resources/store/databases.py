"""Server-level housekeeping: per-repository databases, Dagster's schema, the vector extension.

Each step is safe when two processes do it at the same moment: PostgreSQL's "already exists"
answers are taken as success, never as failure.
"""

from __future__ import annotations

import time

import psycopg
import sqlalchemy as sa
from psycopg import errors as pg_errors
from psycopg import sql
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import URL

from kb_assets.core.errors import StoreUnavailableError
from kb_resources.store.target import display, one_line

_CREATE_ATTEMPTS = 20
_RETRY_PAUSE_S = 0.1


def _libpq_kwargs(url: URL) -> dict[str, object]:
    """psycopg connection keywords for a SQLAlchemy URL (host may be a socket directory)."""
    kwargs: dict[str, object] = {k: v for k, v in url.query.items() if isinstance(v, str)}
    for key, value in (("user", url.username), ("password", url.password), ("host", url.host)):
        if value:
            kwargs[key] = value
    if url.port:
        kwargs["port"] = url.port
    kwargs["dbname"] = url.database or "postgres"
    kwargs["connect_timeout"] = 10
    return kwargs


def ensure_database(admin_url: URL, name: str, *, create: bool) -> bool:
    """Tell whether database ``name`` exists, creating it first when ``create`` (race-safe)."""
    try:
        with psycopg.connect(**_libpq_kwargs(admin_url), autocommit=True) as conn:  # type: ignore[arg-type]
            for _ in range(_CREATE_ATTEMPTS):
                if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
                    return True
                if not create:
                    return False
                try:
                    conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
                    return True
                except (pg_errors.DuplicateDatabase, pg_errors.UniqueViolation):
                    return True  # another process created it first
                except pg_errors.ObjectInUse:
                    time.sleep(_RETRY_PAUSE_S)  # template1 busy with a concurrent CREATE DATABASE
    except psycopg.OperationalError as exc:
        raise StoreUnavailableError(display(admin_url), one_line(exc, admin_url.password)) from None
    raise StoreUnavailableError(display(admin_url), f"could not create database {name}: template1 stays busy")


def drop_database(admin_url: URL, name: str) -> None:
    """Drop database ``name`` if it exists, disconnecting its sessions (tests and `kb` resets)."""
    with psycopg.connect(**_libpq_kwargs(admin_url), autocommit=True) as conn:  # type: ignore[arg-type]
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def ensure_schema(engine: sa.Engine, schema: str) -> None:
    """Create ``schema`` if it is missing; concurrent creators both succeed."""
    statement = sa.schema.CreateSchema(schema, if_not_exists=True)  # quoted by the dialect
    for attempt in range(2):
        try:
            with engine.begin() as conn:
                conn.execute(statement)
            return
        except sa_exc.IntegrityError:
            if attempt:
                raise


def require_vector(conn: sa.Connection, target: str) -> None:
    """Raise ``StoreUnavailableError`` with a hint when the server cannot provide pgvector."""
    row = conn.execute(sa.text("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")).first()
    conn.rollback()
    if row is None:
        raise StoreUnavailableError(
            target,
            "the PostgreSQL extension 'vector' (pgvector) is not available on this server; "
            "install pgvector there, or drop --db-url/KB_DB_URL to use the embedded PostgreSQL",
        )
