"""Bulk writes through PostgreSQL's COPY, inside the caller's SQLAlchemy transaction.

COPY is ~4x faster than ``executemany``. Content-addressed rows go through a temporary staging
table (``ON COMMIT DROP``) and then ``INSERT ... SELECT ... ON CONFLICT DO NOTHING``, so writing a
row that is already there is a no-op; rows that belong to one commit and are replaced wholesale are
copied straight into their table. psycopg's ``write_row`` escapes tabs, newlines and backslashes.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import psycopg
import sqlalchemy as sa
from psycopg import sql

from kb_resources.store.driver import driver_connection as _driver_connection
from kb_resources.store.driver import local_setting
from kb_resources.store.hex_ids import HexId, hex_id, stored_rows
from kb_resources.store.schema import metadata
from kb_resources.store.statistics import analyze

_stage_names = itertools.count()


def _copy(
    raw: psycopg.Connection[Any],
    table: sql.Composable,
    columns: Sequence[str],
    rows: Iterable[Sequence[object]],
) -> int:
    """COPY ``rows`` into ``table``; return how many rows were sent."""
    statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
        table, sql.SQL(", ").join(map(sql.Identifier, columns))
    )
    count = 0
    with raw.cursor() as cur, cur.copy(statement) as copy:
        for row in rows:
            copy.write_row(row)
            count += 1
    return count


_ID_COLUMNS = frozenset(
    (table.name, column.name)
    for table in metadata.tables.values()
    for column in table.columns
    if isinstance(column.type, HexId)
)
"""``(table, column)`` of every id the schema stores as bytes (``hex_ids``): rows give them in
hex, ``COPY`` sends them as bytes, and keys read back come back in hex."""


def _ids_at(table: str, columns: Sequence[str]) -> list[int]:
    """The positions among ``columns`` of ``table``'s id columns."""
    return [i for i, name in enumerate(columns) if (table, name) in _ID_COLUMNS]


def _keys(table: str, column: str, rows: Iterable[Sequence[Any]]) -> list[Any]:
    """The first value of each row read back from ``table.column``, an id in hex."""
    if (table, column) in _ID_COLUMNS:
        return [hex_id(row[0]) for row in rows]
    return [row[0] for row in rows]


class Analysis(NamedTuple):
    """How a bulk load refreshes a table's statistics, where not as the server would."""

    columns: tuple[str, ...] | None
    """The columns analyzed (the others keep what autovacuum's analyses, of every column, found;
    None: every column)."""
    target: int | None
    """The statistics target (300 sampled rows per unit; None: the server's default)."""


ANALYSES = {"artifact": Analysis(("artifact_id", "kind", "logical_key", "extractor_id"), 10)}
"""``ANALYZE artifact`` after a load covers the keys plans use, not the JSON payload nothing is
planned on (half of each analysis: 0.42 vs 0.19 s on Django's 88k artifacts), from 3,000 sampled
rows instead of 30,000 (0.12-0.20 -> 0.022-0.026 s, twice a full index) with the estimates the
plans use unchanged: ids and logical keys all distinct (``n_distinct`` -1 either way), the few
kinds and extractors among the most common values (3-5 of them either way). Hashes and keys have
no useful histogram to sharpen with a larger sample."""

AS_THE_SERVER = Analysis(None, None)
"""Every other table's: all columns, at the server's default target."""

ANALYZE_AFTER_ROWS = 10_000
"""A bulk load this large refreshes the table's planner statistics at once: autovacuum would do it
minutes later, and until then the planner treats a 50k-row table as empty."""


def copy_rows(
    conn: sa.Connection, table: str, columns: Sequence[str], rows: Iterable[Sequence[object]]
) -> int:
    """COPY rows straight into ``table`` (for rows the caller just deleted); return the row count."""
    sent = stored_rows(rows, _ids_at(table, columns))
    return _copy(_driver_connection(conn), sql.Identifier(table), columns, sent)


PROBE_RANDOM_PAGE_COST = "1.1"
"""The planner's price of a random page read while ``stored_keys`` joins its probe (the rest of
the transaction keeps the server's). At PostgreSQL's default, 4 (a spinning disk's), a batch of
5,000 ids was answered by hashing the whole artifact table (Django's 88k rows, 46 MB: 45 ms);
at 1.1, the usual value for SSDs and a cached table, by index probes (15-22 ms), while 88k ids
still hash (0.15 s, as before). A one-file Django commit probes 11k import-edge ids this way."""


def stored_keys(conn: sa.Connection, table: str, column: str, keys: Collection[str]) -> set[str]:
    """Which of ``keys`` already have a row in ``table`` (``column`` being its one-column key).

    The keys travel by COPY into a temporary table and come back through one anti-join, so the
    answer costs one pass whatever the batch size (2x faster than ``= ANY(array)`` on 88k ids).
    Writers call this to send only the rows that are new instead of re-sending a whole commit.
    """
    if not keys:
        return set()
    raw = _driver_connection(conn)
    probe = sql.Identifier(f"_kb_probe_{table}_{next(_stage_names)}")
    key = sql.Identifier(column)
    with raw.cursor() as cur:
        cur.execute(
            sql.SQL("CREATE TEMP TABLE {} ON COMMIT DROP AS SELECT {} FROM {} WITH NO DATA").format(
                probe, key, sql.Identifier(table)
            )
        )
    _copy(raw, probe, (column,), stored_rows(((k,) for k in keys), _ids_at(table, (column,))))
    with raw.cursor() as cur:
        with local_setting(cur, "random_page_cost", PROBE_RANDOM_PAGE_COST):
            cur.execute(
                sql.SQL("SELECT p.{} FROM {} p JOIN {} t ON t.{} = p.{}").format(
                    key, probe, sql.Identifier(table), key, key
                )
            )
            rows = cur.fetchall()
        cur.execute(sql.SQL("DROP TABLE {}").format(probe))
    return set(_keys(table, column, rows))


@dataclass
class LoadLog:
    """Rows that one load, written in several transactions, added per table: its planner
    statistics are refreshed once, at the end (``refresh_statistics``), not after each batch.

    Analyzing after every batch re-sampled a table growing batch by batch: on a full Django index
    five ``ANALYZE artifact`` (1.3 s) and four of ``artifact_derived_from`` (0.7 s) for one step.
    """

    rows: Counter[str] = field(default_factory=Counter)


def refresh_statistics(conn: sa.Connection, log: LoadLog) -> None:
    """Analyze each table ``log`` loaded, if the load was large for it (``analyze_if_large``)."""
    for table in sorted(log.rows):
        analyze_if_large(conn, table, log.rows[table])


def _loaded(conn: sa.Connection, table: str, count: int, log: LoadLog | None) -> None:
    """Record a load in ``log``, or without one refresh the table's statistics now."""
    if log is None:
        analyze_if_large(conn, table, count)
    else:
        log.rows[table] += count


def copy_new_rows(
    conn: sa.Connection,
    table: str,
    columns: Sequence[str],
    rows: Iterable[Sequence[object]],
    *,
    order_by: Sequence[str],
    log: LoadLog | None = None,
) -> int:
    """COPY rows into ``table`` skipping those whose key already exists; return how many were new.

    Rows are inserted in ``order_by`` order (the primary key), so two writers of overlapping sets
    take their row locks in the same order and cannot deadlock.
    """
    count = _insert_new(conn, table, columns, rows, order_by=order_by, returning=None)[0]
    _loaded(conn, table, count, log)
    return count


def insert_new_keys(
    conn: sa.Connection,
    table: str,
    columns: Sequence[str],
    rows: Iterable[Sequence[object]],
    *,
    key: str,
    log: LoadLog | None = None,
) -> set[str]:
    """``copy_new_rows`` on a one-column ``key``, returning the keys this statement inserted.

    Rows that only the caller's transaction can have written (a new parent's children) then go in
    by a plain COPY: ``ON CONFLICT``'s speculative insertion costs about 1.5x per row, 1-3 s for
    the 320k grounding rows of Django's call edges. A key another writer inserted concurrently is
    not returned (its statement waited for that writer), so its children are that writer's.
    """
    count, keys = _insert_new(conn, table, columns, rows, order_by=(key,), returning=key)
    _loaded(conn, table, count, log)
    return set(keys)


def insert_missing_keys(
    conn: sa.Connection,
    table: str,
    columns: Sequence[str],
    rows: Callable[[], Iterable[Sequence[object]]],
    *,
    key: str,
    log: LoadLog | None = None,
) -> set[str]:
    """``insert_new_keys`` for rows the caller has just found missing (``stored_keys``): the rows
    ``rows()`` gives, in ``key`` order and each key once, go straight into ``table`` by one COPY.

    Staging them and inserting ``ON CONFLICT DO NOTHING`` costs more than twice as much (38k
    artifact rows of Django's call edges: 0.83-0.96 s against 0.36-0.42 s), and only protects
    against a key that another writer stored since the caller looked. So the COPY runs under a
    savepoint: if such a key turns up (a unique violation; the other writer's statement is waited
    for first, and rows in key order take their locks in the same order as ``insert_new_keys``
    does), the savepoint is rolled back and ``rows()`` is sent again through ``insert_new_keys``,
    which returns only the keys this statement inserted.
    """
    at = columns.index(key)
    sent: list[str] = []

    def keyed() -> Iterable[Sequence[object]]:
        for row in rows():
            sent.append(str(row[at]))
            yield row

    try:
        with _driver_connection(conn).transaction():  # a savepoint: the caller's transaction is open
            copy_loaded_rows(conn, table, columns, keyed(), log=log)
    except psycopg.errors.UniqueViolation:
        return insert_new_keys(conn, table, columns, rows(), key=key, log=log)
    return set(sent)


def copy_loaded_rows(
    conn: sa.Connection,
    table: str,
    columns: Sequence[str],
    rows: Iterable[Sequence[object]],
    *,
    log: LoadLog | None = None,
) -> int:
    """``copy_rows`` for rows that count towards ``table``'s statistics refresh."""
    count = copy_rows(conn, table, columns, rows)
    _loaded(conn, table, count, log)
    return count


def _insert_new(
    conn: sa.Connection,
    table: str,
    columns: Sequence[str],
    rows: Iterable[Sequence[object]],
    *,
    order_by: Sequence[str],
    returning: str | None,
) -> tuple[int, list[Any]]:
    """Stage ``rows`` and insert the new ones: how many, and their ``returning`` column if asked."""
    raw = _driver_connection(conn)
    stage = sql.Identifier(f"_kb_stage_{table}_{next(_stage_names)}")
    cols = sql.SQL(", ").join(map(sql.Identifier, columns))
    with raw.cursor() as cur:
        cur.execute(
            sql.SQL("CREATE TEMP TABLE {} (LIKE {} INCLUDING DEFAULTS) ON COMMIT DROP").format(
                stage, sql.Identifier(table)
            )
        )
    count, keys = 0, []
    if _copy(raw, stage, columns, stored_rows(rows, _ids_at(table, columns))) > 0:
        insert = "INSERT INTO {} ({}) SELECT {} FROM {} ORDER BY {} ON CONFLICT DO NOTHING"
        statement = sql.SQL(insert).format(
            sql.Identifier(table), cols, cols, stage, sql.SQL(", ").join(map(sql.Identifier, order_by))
        )
        with raw.cursor() as cur:
            if returning is None:
                cur.execute(statement)
            else:
                cur.execute(sql.SQL("{} RETURNING {}").format(statement, sql.Identifier(returning)))
                keys = _keys(table, returning, cur.fetchall())
            count = max(cur.rowcount, 0)
    with raw.cursor() as cur:
        cur.execute(sql.SQL("DROP TABLE {}").format(stage))
    return count, keys


def analyze_if_large(conn: sa.Connection, table: str, written: int) -> None:
    """Refresh ``table``'s planner statistics after a bulk load of ``ANALYZE_AFTER_ROWS`` or more
    rows that is also a tenth or more of what the table held when last analyzed (or it never was).

    The planner scales a table's row count by its current size on its own; what a load makes it
    get wrong is a table it saw nearly empty. Re-analyzing a large table after each commit's
    snapshot (88k rows onto millions, 0.2 s on Django) would change little, and autovacuum
    analyzes it anyway once a tenth of it is new."""
    if written < ANALYZE_AFTER_ROWS:
        return
    with _driver_connection(conn).cursor() as cur:
        cur.execute("SELECT reltuples FROM pg_class WHERE oid = %s::regclass", (table,))
        found = cur.fetchone()
    held = float(found[0]) if found is not None else -1.0
    if held < 0 or written * 10 >= held:  # reltuples is -1 until the first analysis
        how = ANALYSES.get(table, AS_THE_SERVER)
        analyze(conn, table, how.columns, target=how.target)
