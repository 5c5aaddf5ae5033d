"""Pooled connections pinged before use only when they sat idle, not at every checkout.

SQLAlchemy's ``pool_pre_ping`` sends a round trip before every checkout, so that a connection the
server dropped while it sat in the pool (a restart, an idle timeout, a terminated backend) is
replaced instead of failing its next statement. A run checks connections out hundreds of times a
second: one warm one-file Django commit under ``kb watch`` sent 415 pings (341 from Dagster's
storages, one per event write or read, and 74 from the knowledge store's engine), a fifth of all
its statements, each a wait for the server's process while both cores are busy (py-spy: ~60 ms of
the watch's thread a commit). Here a connection is pinged only when there is a reason to doubt it:

- the server sent it something while it sat in the pool. A server that ends a connection (a
  restart, ``pg_terminate_backend``, an idle timeout) first sends the client its error, and a
  process that dies leaves the socket at end of file: either makes the socket readable, which one
  ``poll`` with no timeout sees without a round trip. A healthy idle connection has nothing to
  read: its statements' replies were all read before it came back;
- or it sat idle ``IDLE_PING_S`` or more: between commits, after a long step, where a connection
  over TCP may also have lost its peer without a word.

What this gives up: a connection whose peer vanished silently (a host or a network gone, no FIN)
within ``IDLE_PING_S`` of its last use is handed out; its statement fails as a disconnect, which
invalidates the pool (SQLAlchemy's own handling), so that one statement is lost. The embedded
server's connections are a local socket, where a dying server always hangs up.
"""

from __future__ import annotations

import select
import time
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa

IDLE_PING_S = 1.0
"""How long a pooled connection may sit idle and still be handed out without a ping."""

_RETURNED = "kb_returned_at"
"""The connection record's ``info`` key (cleared with the connection) holding when it came back."""


def ping_after_idle(
    engine: sa.Engine, idle_s: float | None = None, clock: Callable[[], float] = time.monotonic
) -> None:
    """Make ``engine``'s pool (one made without ``pool_pre_ping``) ping a connection on checkout
    only if the server sent it something while it sat idle, or it sat idle ``idle_s`` (default
    ``IDLE_PING_S``, read now) or more; a dead one is replaced, and every other pooled connection
    as old with it."""
    idle = IDLE_PING_S if idle_s is None else idle_s
    dialect = engine.dialect

    def returned(dbapi_connection: Any, record: Any) -> None:
        if dbapi_connection is not None:  # None: it was invalidated, and reconnects fresh
            record.info[_RETURNED] = clock()

    def checked_out(dbapi_connection: Any, record: Any, proxy: Any) -> None:
        since = record.info.get(_RETURNED)
        if since is None:  # never handed back yet: a fresh connection
            return
        if clock() - since < idle and not _spoke(dbapi_connection):
            return
        try:
            dialect.do_ping(dbapi_connection)
        except dialect.loaded_dbapi.Error as err:
            if dialect.is_disconnect(err, dbapi_connection, None):
                raise sa.exc.InvalidatePoolError("the pooled connection was lost while idle") from err
            raise

    sa.event.listen(engine, "checkin", returned)
    sa.event.listen(engine, "checkout", checked_out)


def _spoke(dbapi_connection: Any) -> bool:
    """Whether the connection's socket has something to read (the server's last words, an end of
    file, an error), or cannot be asked: either calls for a ping."""
    try:
        fd = dbapi_connection.fileno()
    except Exception:  # closed, or a driver without one
        return True
    waiting = select.poll()
    waiting.register(fd, select.POLLIN)
    return bool(waiting.poll(0))
