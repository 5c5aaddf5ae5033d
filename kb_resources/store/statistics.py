"""Refreshing a table's planner statistics (``ANALYZE``) without waiting on autovacuum.

A write path analyzes a table right after loading it (``bulk.analyze_if_large``, the commit's
files), and autovacuum, woken by the same load, may be vacuuming that table at that moment. The
two conflict on the table's lock, and a waiter cancels an autovacuum worker only once the
server's ``deadlock_timeout`` has passed (1 s by default): a full Django index's
``ANALYZE artifact_derived_from`` met an insert-triggered vacuum of the table and took 1.11 s
instead of 0.1 s. So an analysis runs with a short ``deadlock_timeout`` (``AUTOVACUUM_WAIT``),
where the role may set it (a superuser, as on the embedded server; elsewhere it waits as before).
The cancelled vacuum is autovacuum's to redo later, as it does whenever a lock waiter cancels it.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

AUTOVACUUM_WAIT = "20ms"
"""How long an ``ANALYZE`` waits on a lock before the server checks for deadlocks, and so before
it cancels an autovacuum worker holding the table."""


def analyze(conn: sa.Connection, table: str, columns: Sequence[str] | None = None) -> None:
    """``ANALYZE table`` (only ``columns`` when given), cancelling an autovacuum of the table
    after ``AUTOVACUUM_WAIT`` rather than after ``deadlock_timeout`` (module docstring)."""
    preparer = conn.dialect.identifier_preparer
    target = preparer.quote(table)
    if columns:
        target += f" ({', '.join(preparer.quote(c) for c in columns)})"
    quick = conn.execute(sa.text("SHOW is_superuser")).scalar() == "on"
    if quick:
        conn.execute(sa.text(f"SET LOCAL deadlock_timeout = '{AUTOVACUUM_WAIT}'"))
    conn.execute(sa.text(f"ANALYZE {target}"))
    if quick:
        conn.execute(sa.text("SET LOCAL deadlock_timeout TO DEFAULT"))
