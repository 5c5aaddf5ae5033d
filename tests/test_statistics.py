"""An ``ANALYZE`` on the write path cancels an autovacuum of its table after ``AUTOVACUUM_WAIT``,
not after the server's ``deadlock_timeout`` (1 s): it shortens the timeout around the statement
where the role may set it, puts it back afterwards, and elsewhere analyzes as before.

That the server then cancels the autovacuum worker is PostgreSQL's documented behaviour for a
lock waiter past ``deadlock_timeout``; what is checked here is what knowbase sends."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa

from kb_resources.store.engine import Store
from kb_resources.store.statistics import AUTOVACUUM_WAIT, analyze


@contextmanager
def _sent(engine: sa.Engine) -> Iterator[list[str]]:
    """The statements ``engine`` sends meanwhile."""
    sent: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        sent.append(statement)

    sa.event.listen(engine, "before_cursor_execute", record)
    try:
        yield sent
    finally:
        sa.event.remove(engine, "before_cursor_execute", record)


def test_a_superuser_analyzes_with_a_short_wait_then_restores_it(store: Store) -> None:
    with store.engine.begin() as conn:
        default = conn.execute(sa.text("SHOW deadlock_timeout")).scalar()
        assert conn.execute(sa.text("SHOW is_superuser")).scalar() == "on"  # the test server's role
        with _sent(store.engine) as sent:
            analyze(conn, "artifact", ["artifact_id", "kind"])
        assert conn.execute(sa.text("SHOW deadlock_timeout")).scalar() == default
        reltuples = conn.execute(
            sa.text("SELECT reltuples FROM pg_class WHERE relname = 'artifact'")
        ).scalar()
    assert sent[1:] == [
        f"SET LOCAL deadlock_timeout = '{AUTOVACUUM_WAIT}'",
        "ANALYZE artifact (artifact_id, kind)",
        "SET LOCAL deadlock_timeout TO DEFAULT",
    ]
    assert reltuples == 0  # analyzed: -1 until a table's first analysis


def test_another_role_analyzes_without_touching_the_timeout(store: Store) -> None:
    role = f"kb_stats_{store.engine.url.database}"
    with store.engine.connect() as admin:
        admin.execute(sa.text(f'CREATE ROLE "{role}"'))
        admin.commit()
    try:
        with store.engine.connect() as conn, conn.begin():
            conn.execute(sa.text(f'SET LOCAL ROLE "{role}"'))
            conn.execute(sa.text("CREATE TEMP TABLE scratch (x int) ON COMMIT DROP"))
            with _sent(store.engine) as sent:
                analyze(conn, "scratch")
            conn.rollback()
        assert sent == ["SHOW is_superuser", "ANALYZE scratch"]
    finally:
        with store.engine.connect() as admin:
            admin.execute(sa.text(f'DROP ROLE "{role}"'))
            admin.commit()
