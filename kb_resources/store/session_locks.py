"""Session-level PostgreSQL advisory locks: how processes opening one fresh database take turns
at creating what it needs (knowbase's schema, Dagster's tables)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa

MIGRATION_LOCK_KEY = 0x6B62_6D69_6772_6174  # "kbmigrat": one advisory lock id for every knowbase database
DAGSTER_INSTANCE_LOCK_KEY = 0x6B62_6461_6773_7472  # "kbdagstr": opening Dagster's instance storage


@contextmanager
def session_lock(conn: sa.Connection, key: int) -> Iterator[None]:
    """Hold advisory lock ``key`` on ``conn`` (waiting for whoever holds it) while inside; the
    transaction that took it is committed, so the caller starts a fresh one."""
    conn.execute(sa.select(sa.func.pg_advisory_lock(key)))
    conn.commit()
    try:
        yield
    finally:
        if not conn.invalidated:  # a broken connection already dropped its session lock
            conn.rollback()
            conn.execute(sa.select(sa.func.pg_advisory_unlock(key)))
            conn.commit()
