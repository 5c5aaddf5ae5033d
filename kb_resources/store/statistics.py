"""Refreshing a table's planner statistics (``ANALYZE``) without waiting on autovacuum.

A write path analyzes a table right after loading it (``bulk.analyze_if_large``, the commit's
files), and autovacuum, woken by the same load, may be vacuuming that table at that moment. The
two conflict on the table's lock, and a waiter cancels an autovacuum worker only once the
server's ``deadlock_timeout`` has passed (1 s by default): a full Django index's
``ANALYZE artifact_derived_from`` met an insert-triggered vacuum of the table and took 1.11 s
instead of 0.1 s. So an analysis runs with a short ``deadlock_timeout`` (``AUTOVACUUM_WAIT``, set
as ``SET LOCAL`` does, then restored: ``driver.local_setting``), where the role may set it (a
superuser, as on the embedded server; elsewhere it waits as before).
The cancelled vacuum is autovacuum's to redo later, as it does whenever a lock waiter cancels it.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import ExitStack

import sqlalchemy as sa
from psycopg import sql

from kb_resources.store.driver import driver_connection, local_setting

AUTOVACUUM_WAIT = "20ms"
"""How long an ``ANALYZE`` waits on a lock before the server checks for deadlocks, and so before
it cancels an autovacuum worker holding the table."""


def analyze(
    conn: sa.Connection, table: str, columns: Sequence[str] | None = None, *, target: int | None = None
) -> None:
    """``ANALYZE table`` (only ``columns`` when given), cancelling an autovacuum of the table
    after ``AUTOVACUUM_WAIT`` rather than after ``deadlock_timeout`` (module docstring); with
    ``target``, at that statistics target (300 sampled rows per unit) instead of the server's
    default for columns that set none."""
    statement = sql.SQL("ANALYZE {}").format(sql.Identifier(table))
    if columns:
        listed = sql.SQL(", ").join(map(sql.Identifier, columns))
        statement = sql.SQL("ANALYZE {} ({})").format(sql.Identifier(table), listed)
    with driver_connection(conn).cursor() as cur, ExitStack() as settings:
        cur.execute("SHOW is_superuser")
        found = cur.fetchone()
        if found is not None and found[0] == "on":
            settings.enter_context(local_setting(cur, "deadlock_timeout", AUTOVACUUM_WAIT))
        if target is not None:
            settings.enter_context(local_setting(cur, "default_statistics_target", str(target)))
        cur.execute(statement)
