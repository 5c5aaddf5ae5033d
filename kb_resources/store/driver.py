"""The psycopg connection under a SQLAlchemy one, for what only the driver offers (``COPY``,
``psycopg.sql`` composition of identifiers)."""

from __future__ import annotations

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
