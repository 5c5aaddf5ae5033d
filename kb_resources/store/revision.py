"""Where the store's schema stands against this program's migrations, and bringing it to head.

Alembic is configured in code (no ini file): the migrations folder sits next to the installed
packages. Migrating holds a PostgreSQL advisory lock, so two processes opening a fresh database at
once serialize instead of racing on ``CREATE TABLE``. Alembic itself is imported only when the
database is not at ``HEAD_REVISION``: every ``kb`` command and the MCP server open the store, and
importing Alembic would add ~0.2 s to each start for a question one ``SELECT`` answers.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa

import kb_resources
from kb_assets.core.errors import SchemaMismatchError
from kb_resources.store.session_locks import MIGRATION_LOCK_KEY, session_lock

if TYPE_CHECKING:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

MIGRATIONS_DIR = Path(kb_resources.__file__).resolve().parent.parent / "migrations"
"""The Alembic script folder of this installation."""

HEAD_REVISION = "0010"
"""The single head of ``MIGRATIONS_DIR`` (``test_store_migrations`` checks it against Alembic's)."""


def alembic_config(connection: sa.Connection | None = None) -> Config:
    """An Alembic config for our migrations, optionally bound to an open connection."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


@cache
def _scripts() -> ScriptDirectory:
    """The migrations folder, read once per process."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config())


def head_revision() -> str:
    """The revision this program's schema is at (the single head of the migrations)."""
    return HEAD_REVISION


def scripts_head() -> str:
    """The head of the migrations as Alembic reads it from ``MIGRATIONS_DIR``."""
    head = _scripts().get_current_head()
    if head is None:  # pragma: no cover - the package ships migrations
        raise RuntimeError(f"no migrations found in {MIGRATIONS_DIR}")
    return head


def known_revisions() -> frozenset[str]:
    """Every revision id this program knows, to tell "behind" from "migrated by a newer knowbase"."""
    return frozenset(script.revision for script in _scripts().walk_revisions())


def current_revision(conn: sa.Connection) -> str | None:
    """The revision stamped in the database (None for a database never migrated), read as Alembic
    keeps it: the one row of ``alembic_version`` on the search path."""
    if conn.scalar(sa.text("SELECT to_regclass('alembic_version')")) is None:
        return None
    stamped = sorted(conn.scalars(sa.text("SELECT version_num FROM alembic_version")))
    if len(stamped) > 1:  # branches: never a knowbase schema
        raise SchemaMismatchError(", ".join(stamped), HEAD_REVISION, newer=False)
    return stamped[0] if stamped else None


def is_at_head(conn: sa.Connection) -> bool:
    """Whether the database's schema is exactly the one this program was built for."""
    return current_revision(conn) == head_revision()


def check_not_newer(conn: sa.Connection) -> str | None:
    """Return the current revision; raise ``SchemaMismatchError(newer=True)`` if we do not know it."""
    found = current_revision(conn)
    if found is not None and found != HEAD_REVISION and found not in known_revisions():
        raise SchemaMismatchError(found, head_revision(), newer=True)
    return found


def require_head(conn: sa.Connection) -> None:
    """Refuse to go on unless the schema is at head (for read-only users that cannot migrate)."""
    found = check_not_newer(conn)
    if found != head_revision():
        raise SchemaMismatchError(found, head_revision(), newer=False)


def migrate_to_head(engine: sa.Engine) -> None:
    """Upgrade the database to head under an advisory lock; a no-op when it is already there."""
    with engine.connect() as conn, session_lock(conn, MIGRATION_LOCK_KEY):
        if check_not_newer(conn) != head_revision():
            from alembic import command

            conn.commit()
            command.upgrade(alembic_config(conn), "head")
        conn.commit()
