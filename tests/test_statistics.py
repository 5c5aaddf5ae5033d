"""An ``ANALYZE`` on the write path cancels an autovacuum of its table after ``AUTOVACUUM_WAIT``,
not after the server's ``deadlock_timeout`` (1 s): it shortens the timeout around the statement
where the role may set it, puts it back afterwards, and elsewhere analyzes as before.

That the server then cancels the autovacuum worker is PostgreSQL's documented behaviour for a
lock waiter past ``deadlock_timeout``; what is checked here is what knowbase sends, and what the
server's settings and statistics are afterwards."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
import sqlalchemy as sa

from kb_resources.store import statistics
from kb_resources.store.driver import driver_connection
from kb_resources.store.engine import Store
from kb_resources.store.statistics import AUTOVACUUM_WAIT, analyze


class _Cursor:
    """A psycopg cursor that records each statement (and its parameters) it runs."""

    def __init__(self, cur: psycopg.Cursor[Any], raw: psycopg.Connection[Any], sent: list[str]) -> None:
        self.cur, self.raw, self.sent = cur, raw, sent

    def execute(self, query: Any, params: Any = None) -> None:
        text = query if isinstance(query, str) else query.as_string(self.raw)
        self.sent.append(text if params is None else f"{text} {list(params)}")
        self.cur.execute(query, params)

    def fetchone(self) -> Any:
        return self.cur.fetchone()


class _Recording:
    """A psycopg connection whose cursors record what they run."""

    def __init__(self, raw: psycopg.Connection[Any], sent: list[str]) -> None:
        self.raw, self.sent = raw, sent

    @contextmanager
    def cursor(self) -> Iterator[_Cursor]:
        with self.raw.cursor() as cur:
            yield _Cursor(cur, self.raw, self.sent)


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The statements ``analyze`` runs during the test."""
    recorded: list[str] = []
    monkeypatch.setattr(
        statistics, "driver_connection", lambda conn: _Recording(driver_connection(conn), recorded)
    )
    return recorded


def test_a_superuser_analyzes_with_a_short_wait_then_restores_it(store: Store, sent: list[str]) -> None:
    with store.engine.begin() as conn:
        default = conn.execute(sa.text("SHOW deadlock_timeout")).scalar()
        assert conn.execute(sa.text("SHOW is_superuser")).scalar() == "on"  # the test server's role
        analyze(conn, "artifact", ["artifact_id", "kind"])
        assert conn.execute(sa.text("SHOW deadlock_timeout")).scalar() == default
        reltuples = conn.execute(
            sa.text("SELECT reltuples FROM pg_class WHERE relname = 'artifact'")
        ).scalar()
    assert sent == [
        "SHOW is_superuser",
        "SELECT current_setting(%s) ['deadlock_timeout']",
        f"SELECT set_config(%s, %s, true) ['deadlock_timeout', '{AUTOVACUUM_WAIT}']",
        'ANALYZE "artifact" ("artifact_id", "kind")',
        f"SELECT set_config(%s, %s, true) ['deadlock_timeout', '{default}']",
    ]
    assert reltuples == 0  # analyzed: -1 until a table's first analysis


def test_another_role_analyzes_without_touching_the_timeout(store: Store, sent: list[str]) -> None:
    role = f"kb_stats_{store.engine.url.database}"
    with store.engine.connect() as admin:
        admin.execute(sa.text(f'CREATE ROLE "{role}"'))
        admin.commit()
    try:
        with store.engine.connect() as conn, conn.begin():
            conn.execute(sa.text(f'SET LOCAL ROLE "{role}"'))
            conn.execute(sa.text("CREATE TEMP TABLE scratch (x int) ON COMMIT DROP"))
            analyze(conn, "scratch")
            conn.rollback()
        assert sent == ["SHOW is_superuser", 'ANALYZE "scratch"']
    finally:
        with store.engine.connect() as admin:
            admin.execute(sa.text(f'DROP ROLE "{role}"'))
            admin.commit()


def test_an_analysis_at_a_target_samples_at_it_then_restores_the_default(
    store: Store, sent: list[str]
) -> None:
    """``target`` holds for the one statement: the histogram has that many buckets, and the
    session's default is what it was."""
    with store.engine.begin() as conn:
        default = conn.execute(sa.text("SHOW default_statistics_target")).scalar()
        conn.execute(
            sa.text(
                "CREATE TEMP TABLE scratch ON COMMIT DROP AS SELECT g AS x FROM generate_series(1, 20000) g"
            )
        )
        analyze(conn, "scratch", target=10)
        assert conn.execute(sa.text("SHOW default_statistics_target")).scalar() == default
        bounds = conn.execute(
            sa.text(
                "SELECT cardinality(histogram_bounds::text::int[]) FROM pg_stats WHERE tablename = 'scratch'"
            )
        ).scalar()
    assert bounds == 11  # 10 buckets (101 at the default target of 100)
    assert sent[-4:-1] == [  # then the deadlock timeout is put back
        "SELECT set_config(%s, %s, true) ['default_statistics_target', '10']",
        'ANALYZE "scratch"',
        f"SELECT set_config(%s, %s, true) ['default_statistics_target', '{default}']",
    ]
