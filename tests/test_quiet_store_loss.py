"""A store lost mid-run is narrated once, by knowbase: SQLAlchemy's pool does not print its own
traceback while a run is inside ``quiet_store_loss``.

The pool's "Exception during reset or similar" is a race with the server's death (it appears when
a connection is handed back after the server went away), so the end-to-end fault test met it only
sometimes. Here it is made to happen every time: a real connection, inside a transaction, whose
backend is terminated by the server before the connection goes back to its pool. The script runs
in a subprocess so that Python's own last-resort logging applies, as it does to ``kb``.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

_SCRIPT = textwrap.dedent(
    """
    import sys

    import sqlalchemy as sa

    from kb_assets.cli.runner import quiet_store_loss
    from kb_resources.store.target import parse_store_url

    engine = sa.create_engine(parse_store_url(sys.argv[1]), poolclass=sa.pool.NullPool)
    killer = sa.create_engine(parse_store_url(sys.argv[1]), poolclass=sa.pool.NullPool)

    def lose_a_connection() -> None:
        conn = engine.raw_connection()  # the pool's own handle, as dagster-postgres's code holds it
        cursor = conn.cursor()
        cursor.execute("SELECT pg_backend_pid()")  # a transaction is open
        (pid,) = cursor.fetchone()
        with killer.connect() as other:
            other.execute(sa.text("SELECT pg_terminate_backend(:p)"), {"p": pid})
        conn.close()  # the pool rolls the transaction back on a connection whose backend is gone

    if sys.argv[2] == "quiet":
        with quiet_store_loss():
            lose_a_connection()
    else:
        lose_a_connection()
    print("done")
    """
)


def _run(url: str, mode: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _SCRIPT, url, mode], capture_output=True, text=True, timeout=60, check=False
    )


def test_a_connection_lost_outside_a_run_is_reported_by_the_pool(blank_database: str) -> None:
    """The witness: without the quieting, the pool prints its traceback (so the next test means
    something)."""
    res = _run(blank_database, "loud")
    assert res.returncode == 0, res.stderr
    assert "Exception during reset or similar" in res.stderr
    assert "Traceback" in res.stderr


def test_a_connection_lost_inside_a_run_prints_nothing(blank_database: str) -> None:
    """Inside ``quiet_store_loss`` the same loss prints nothing: the run's exit-3 line is the only
    word about it."""
    res = _run(blank_database, "quiet")
    assert res.returncode == 0, res.stderr
    assert res.stdout == "done\n"
    assert res.stderr == ""
