"""Dagster's instance storage, tuned for the runs knowbase executes: one pooled connection per
storage, the catalog asked once per process whether Dagster's tables exist, and a run's repeated
look-ups answered from memory (``kb_assets.run_lookups``).

``kb`` tunes the instance it opens (``kb_assets.cli.instance``); a run Dagster launched from the UI
or a sensor tunes the instance its process was given (``kb_assets.assets.launched``), which
Dagster opens with a fresh connection per storage call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kb_assets.run_lookups import remember_run_lookups, remembered

if TYPE_CHECKING:
    import dagster as dg


def tune_instance(instance: dg.DagsterInstance) -> None:
    """Pool the storages' connections, remember the schema probes (below) and a run's look-ups
    (``kb_assets.run_lookups``)."""
    _pool_connections(instance)
    _remember_schema_probes(instance)
    remember_run_lookups(instance)


def _pool_connections(instance: dg.DagsterInstance) -> None:
    """Keep one pooled, pre-pinged connection per Dagster storage instead of one per call.

    dagster-postgres opens a fresh connection for every storage call by default (hundreds per run).
    ``optimize_for_webserver`` pools them as the webserver does; pre-ping (checked on checkout, one
    round trip) keeps a server restart during a run from breaking the next event write, which a
    fresh connection per call would have survived. Storages that are not the SQLAlchemy-backed
    ones this knows keep Dagster's default.
    """
    storages = (instance.run_storage, instance.event_log_storage, instance.schedule_storage)
    if not all(hasattr(getattr(s, "_engine", None), "pool") for s in storages):
        return
    instance.optimize_for_webserver(statement_timeout=0, pool_recycle=3600, max_overflow=4)
    for storage in storages:
        storage._engine.pool._pre_ping = True  # type: ignore[union-attr]


SCHEMA_PROBES = (
    ("event_log_storage", "has_table", 0),
    ("event_log_storage", "_has_asset_key_col_on_connection", 1),
    ("run_storage", "has_run_stats_index_cols", 0),
    ("run_storage", "has_backfill_id_column", 0),
)
"""Dagster storage methods that ask the catalog whether its schema has a table or column, and how
many leading arguments (a connection) do not name what is asked for."""


def _remember_schema_probes(instance: dg.DagsterInstance) -> None:
    """Ask the catalog once per process whether Dagster's tables and columns exist.

    dagster-postgres 0.29 asks again on every use: a one-file Django run made 120 ``has_table``
    and 33 column reflections (dynamic partitions, asset checks, event tags; ~85 ms of catalog
    queries and as much again of SQLAlchemy). Only an answer "it exists" is kept: nothing a run
    does removes a table or column, while a missing one may be added by ``dagster instance
    migrate`` in another process. Storages without such a method keep their own.
    """
    for storage_name, method, skipped in SCHEMA_PROBES:
        storage = getattr(instance, storage_name, None)
        probe = getattr(storage, method, None)
        if callable(probe):
            setattr(storage, method, remembered(probe, skipped))
