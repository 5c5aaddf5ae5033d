"""The psycopg connection under a SQLAlchemy one, for what only the driver offers (``COPY``,
``psycopg.sql`` composition of identifiers)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import sqlalchemy as sa


def driver_connection(conn: sa.Connection) -> psycopg.Connection[Any]:
    """The psycopg connection under a SQLAlchemy one, with the SQLAlchemy transaction begun."""
    if not conn.in_transaction():
        conn.begin()
    raw = conn.connection.driver_connection
    if not isinstance(raw, psycopg.Connection):
        raise TypeError(f"the store needs the psycopg 3 driver, got {type(raw).__name__}")
    return raw


@contextmanager
def local_setting(cur: psycopg.Cursor[Any], name: str, value: str) -> Iterator[None]:
    """The server setting ``name`` at ``value`` for the statements ``cur`` runs within (as ``SET
    LOCAL`` would), then back at what it was, so the rest of the caller's transaction keeps its
    own. If a statement within fails, the transaction is aborted and its rollback undoes the
    setting anyway."""
    cur.execute("SELECT current_setting(%s)", (name,))
    found = cur.fetchone()
    cur.execute("SELECT set_config(%s, %s, true)", (name, value))
    yield
    if found is not None:
        cur.execute("SELECT set_config(%s, %s, true)", (name, found[0]))
