"""A pooled connection is pinged before use only when there is a reason to doubt it (``idle_ping``):
one handed back a moment ago is used as it is; one idle for ``IDLE_S`` is pinged, and replaced if
lost; one the server ended a moment ago is pinged and replaced. Each on both drivers: the knowledge
store's psycopg 3 and Dagster's storages' psycopg2."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from kb_resources.store.idle_ping import ping_after_idle
from kb_resources.store.target import parse_store_url

IDLE_S = 5.0
DRIVERS = ["postgresql+psycopg", "postgresql+psycopg2"]


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Pinged:
    """An engine pinging after ``IDLE_S`` on ``clock``, with its pings counted (each still sent)."""

    def __init__(self, url: str, driver: str, clock: Clock) -> None:
        self.url = parse_store_url(url).set(drivername=driver)
        self.engine = sa.create_engine(self.url)
        ping_after_idle(self.engine, IDLE_S, clock)
        self.pings = 0
        ping = self.engine.dialect.do_ping

        def counted(dbapi_connection: Any) -> bool:
            self.pings += 1
            return ping(dbapi_connection)

        self.engine.dialect.do_ping = counted  # type: ignore[method-assign]

    def backend(self) -> int:
        """The server process of the connection the pool hands out now."""
        with self.engine.connect() as conn:
            return int(conn.execute(sa.text("SELECT pg_backend_pid()")).scalar_one())

    def terminate(self, pid: int) -> None:
        """Have the server drop that connection, as a restart or an idle timeout would."""
        killer = sa.create_engine(self.url, poolclass=sa.pool.NullPool)
        with killer.connect() as conn:
            assert conn.execute(sa.text("SELECT pg_terminate_backend(:p)"), {"p": pid}).scalar_one()
        killer.dispose()


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_connection_handed_back_within_the_window_is_used_without_a_ping(
    blank_database: str, driver: str
) -> None:
    """Checkouts a second apart reuse the pooled connection with no round trip before it; the
    first checkout after ``IDLE_S`` in the pool pings it."""
    clock = Clock()
    pinged = Pinged(blank_database, driver, clock)
    first = pinged.backend()  # a new connection: nothing to ping
    for _ in range(5):
        clock.now += 1.0
        assert pinged.backend() == first
    assert pinged.pings == 0
    clock.now += IDLE_S
    assert pinged.backend() == first
    assert pinged.pings == 1
    pinged.engine.dispose()


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_connection_lost_while_idle_is_replaced_before_use(blank_database: str, driver: str) -> None:
    """The server dropped the pooled connection; after ``IDLE_S`` the ping finds it gone and the
    pool hands out a new one: the statement succeeds."""
    clock = Clock()
    pinged = Pinged(blank_database, driver, clock)
    lost = pinged.backend()
    pinged.terminate(lost)
    clock.now += IDLE_S
    assert pinged.backend() != lost
    assert pinged.pings == 1
    pinged.engine.dispose()


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_connection_the_server_ended_within_the_window_is_replaced_before_use(
    blank_database: str, driver: str
) -> None:
    """A second after its last use, the server ends the pooled connection (as a restart does):
    its last words make the socket readable, so it is pinged, found gone and replaced; the
    statement succeeds."""
    clock = Clock()
    pinged = Pinged(blank_database, driver, clock)
    lost = pinged.backend()
    pinged.terminate(lost)
    clock.now += 1.0
    assert pinged.backend() != lost
    assert pinged.pings == 1
    pinged.engine.dispose()
