"""Recognizing a lost store behind whatever error reached the CLI.

When the server goes away mid-run (stopped, restarted, killed, network gone), the error surfaces
as a SQLAlchemy, psycopg, psycopg2 or dagster-postgres exception, often wrapped by Dagster. The
contract says that is exit 3 with one line, like a store unreachable at start, and not an
"internal error" with a multi-line driver message. Only connection-level failures count: SQLSTATE
class 08 (connection exception), 57P01-57P03 (the server shutting down or not yet accepting), or
no SQLSTATE at all (the socket broke before the server answered). A deadlock or a cancelled
statement is an OperationalError too, but not a lost store.
"""

from __future__ import annotations

from kb_assets.core.errors import StoreUnavailableError
from kb_resources.store.target import one_line

_DRIVER_MODULES = ("sqlalchemy", "psycopg", "psycopg2")
_CONNECTION_ERRORS = ("OperationalError", "InterfaceError")
_DAGSTER_POSTGRES = "DagsterPostgresException"  # raised after dagster-postgres gave up reconnecting


def lost_store(err: BaseException, target: str, *secrets: str | None) -> StoreUnavailableError | None:
    """The ``StoreUnavailableError`` to report when ``err`` (or what it wraps) is a lost connection."""
    for cause in _chain(err):
        if type(cause).__name__ == _DAGSTER_POSTGRES or _is_connection_failure(cause):
            return StoreUnavailableError(target, one_line(_innermost(cause), *secrets))
    return None


def _chain(err: BaseException) -> list[BaseException]:
    """``err`` and everything it wraps (Dagster's ``user_exception``, causes, contexts), once each."""
    seen: list[BaseException] = []
    todo: list[BaseException] = [err]
    while todo:
        cause = todo.pop(0)
        if any(cause is s for s in seen):
            continue
        seen.append(cause)
        for attr in ("user_exception", "orig", "__cause__", "__context__"):
            inner = getattr(cause, attr, None)
            if isinstance(inner, BaseException):
                todo.append(inner)
    return seen


def _is_connection_failure(err: BaseException) -> bool:
    kind = type(err)
    driver = any(
        base.__module__.split(".")[0] in _DRIVER_MODULES and base.__name__ in _CONNECTION_ERRORS
        for base in kind.__mro__
    )
    if not driver:
        return False
    driver_error = getattr(err, "orig", None) or err  # SQLAlchemy wraps the driver's error
    state = getattr(driver_error, "sqlstate", None) or getattr(driver_error, "pgcode", None)
    return state is None or str(state).startswith(("08", "57P"))


def _innermost(err: BaseException) -> BaseException:
    """The driver's own error under a wrapper, for the one-line reason."""
    inner = getattr(err, "orig", None) or err.__cause__
    return inner if isinstance(inner, BaseException) and inner is not err else err
