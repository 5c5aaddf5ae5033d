"""Where the store's schema stands against this program's migrations, and bringing it to head.

Alembic is configured in code (no ini file): the migrations folder sits next to the installed
packages. Migrating holds a PostgreSQL advisory lock, so two processes opening a fresh database at
once serialize instead of racing on ``CREATE TABLE``.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

import kb_resources
from kb_assets.core.errors import SchemaMismatchError

MIGRATIONS_DIR = Path(kb_resources.__file__).resolve().parent.parent / "migrations"
"""The Alembic script folder of this installation."""

MIGRATION_LOCK_KEY = 0x6B62_6D69_6772_6174  # "kbmigrat": one advisory lock id for every knowbase database


def alembic_config(connection: sa.Connection | None = None) -> Config:
    """An Alembic config for our migrations, optionally bound to an open connection."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


@cache
def _scripts() -> ScriptDirectory:
    """The migrations folder, read once per process."""
    return ScriptDirectory.from_config(alembic_config())


def head_revision() -> str:
    """The revision this program's schema is at (the single head of the migrations)."""
    head = _scripts().get_current_head()
    if head is None:  # pragma: no cover - the package ships migrations
        raise RuntimeError(f"no migrations found in {MIGRATIONS_DIR}")
    return head


def known_revisions() -> frozenset[str]:
    """Every revision id this program knows, to tell "behind" from "migrated by a newer knowbase"."""
    return frozenset(script.revision for script in _scripts().walk_revisions())


def current_revision(conn: sa.Connection) -> str | None:
    """The revision stamped in the database (None for a database never migrated)."""
    return MigrationContext.configure(conn).get_current_revision()


def is_at_head(conn: sa.Connection) -> bool:
    """Whether the database's schema is exactly the one this program was built for."""
    return current_revision(conn) == head_revision()


def check_not_newer(conn: sa.Connection) -> str | None:
    """Return the current revision; raise ``SchemaMismatchError(newer=True)`` if we do not know it."""
    found = current_revision(conn)
    if found is not None and found not in known_revisions():
        raise SchemaMismatchError(found, head_revision(), newer=True)
    return found


def require_head(conn: sa.Connection) -> None:
    """Refuse to go on unless the schema is at head (for read-only users that cannot migrate)."""
    found = check_not_newer(conn)
    if found != head_revision():
        raise SchemaMismatchError(found, head_revision(), newer=False)


def migrate_to_head(engine: sa.Engine) -> None:
    """Upgrade the database to head under an advisory lock; a no-op when it is already there."""
    with engine.connect() as conn:
        conn.execute(sa.select(sa.func.pg_advisory_lock(MIGRATION_LOCK_KEY)))
        conn.commit()
        try:
            if check_not_newer(conn) != head_revision():
                conn.commit()
                command.upgrade(alembic_config(conn), "head")
            conn.commit()
        finally:
            if not conn.invalidated:  # a broken connection already dropped its session lock
                conn.rollback()
                conn.execute(sa.select(sa.func.pg_advisory_unlock(MIGRATION_LOCK_KEY)))
                conn.commit()
