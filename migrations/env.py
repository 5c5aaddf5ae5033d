"""Alembic environment of the knowledge store.

knowbase runs migrations in code and hands its own connection over in
``config.attributes["connection"]`` (see ``kb_resources.store.revision``); the ``alembic`` command
line instead names the database with ``-x db_url=...`` or ``sqlalchemy.url``.
"""

from __future__ import annotations

from logging.config import fileConfig

from alembic import context
from sqlalchemy import Connection, create_engine, pool

from kb_resources.store.schema import metadata

config = context.config
target_metadata = metadata

if config.config_file_name is not None:  # the alembic command line; knowbase itself passes no ini file
    fileConfig(config.config_file_name)


def _database_url() -> str:
    """The URL given on the command line (``-x db_url=``) or in the ini file."""
    url = context.get_x_argument(as_dictionary=True).get("db_url") or config.get_main_option("sqlalchemy.url")
    if not url:
        raise SystemExit("no database: pass -x db_url=postgresql+psycopg://USER@HOST/DB to alembic")
    return url


def _configure(connection: Connection) -> None:
    """Bind the migration context to a connection, comparing types and server defaults."""
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        compare_type=True,
        compare_server_default=True,
    )


def run_migrations_offline() -> None:
    """Emit the migrations as SQL text (``alembic upgrade --sql``)."""
    context.configure(
        url=_database_url(),
        target_metadata=target_metadata,
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    """Run the migrations on the caller's connection, or on a fresh one from the URL."""
    given = config.attributes.get("connection")
    if given is not None:
        _configure(given)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = create_engine(_database_url(), poolclass=pool.NullPool)
    with engine.connect() as connection:
        _configure(connection)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
