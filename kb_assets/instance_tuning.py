"""Dagster's instance storage, tuned for the runs knowbase executes: one pooled connection per
storage, the catalog asked once per process whether Dagster's tables exist, and a run's repeated
look-ups of its partition and of its assets' wipe details answered once per run.

``kb`` tunes the instance it opens (``kb_assets.cli.instance``); a run Dagster launched from the UI
or a sensor tunes the instance its process was given (``kb_assets.assets.launched``), which
Dagster opens with a fresh connection per storage call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import dagster as dg


def tune_instance(instance: dg.DagsterInstance) -> None:
    """Pool the storages' connections, remember the schema probes and a run's look-ups (below)."""
    _pool_connections(instance)
    _remember_schema_probes(instance)
    _remember_run_lookups(instance)


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
            setattr(storage, method, _remembered(probe, skipped))


def _remembered(
    probe: Callable[..., Any], skipped: int, known: set[tuple[object, ...]] | None = None
) -> Callable[..., Any]:
    """``probe``, answering from memory for arguments it once answered truthy for (in ``known``,
    a set the caller may empty to forget them, else one of its own)."""
    if known is None:
        known = set()

    def remembered(*args: object) -> Any:
        asked = args[skipped:]
        if asked in known:
            return True
        found = probe(*args)
        if found:
            known.add(asked)
        return found

    return remembered


class RunLookups:
    """What one run's steps ask Dagster's event log again and again, answered once per run.

    Every step of a one-file Django run asks whether the commit's partition exists (59 queries a
    run: each input's and output's partition range is checked against the partitions table) and
    reads its assets' wipe details (58: every materialization, data-version and check-target
    look-up filters by the asset's last wipe). Each is a round trip and ~0.3 ms of Dagster's and
    SQLAlchemy's Python on an idle server. Within a run neither answer changes unless another
    process deletes the partition or wipes the asset meanwhile, which would fail or reset that run
    anyway. ``forget`` (``forget_run_lookups``) starts each run afresh, so a deletion or a wipe
    between runs is seen; a partition is remembered only once it exists, and a deletion through
    this instance forgets it.
    """

    def __init__(self) -> None:
        self.partitions: set[tuple[object, ...]] = set()
        """(partitions definition name, partition key) of each partition found (``_remembered``)."""
        self.details: dict[str, object] = {}

    def forget(self) -> None:
        """Ask the storage again from now on (a new run starts)."""
        self.partitions.clear()
        self.details.clear()

    def deleting(self, delete: Callable[[str, str], None]) -> Callable[[str, str], None]:
        """``delete_dynamic_partition``, forgetting the partition it deletes."""

        def delete_dynamic_partition(partitions_def_name: str, partition_key: str) -> None:
            self.partitions.discard((partitions_def_name, partition_key))
            delete(partitions_def_name, partition_key)

        return delete_dynamic_partition

    def assets_details(
        self, asked: Callable[[Sequence[Any]], Sequence[Any]]
    ) -> Callable[[Sequence[Any]], list[Any]]:
        """``_get_assets_details``, remembering each asset's answer (None included)."""

        def get_assets_details(asset_keys: Sequence[Any]) -> list[Any]:
            names = [key.to_string() for key in asset_keys]
            missing = [key for key, name in zip(asset_keys, names, strict=True) if name not in self.details]
            if missing:
                found = asked(missing)
                for key, details in zip(missing, found, strict=True):
                    self.details[key.to_string()] = details
            return [self.details[name] for name in names]

        return get_assets_details


def _remember_run_lookups(instance: dg.DagsterInstance) -> None:
    """Give the event log storage a ``RunLookups`` (kept on the instance for
    ``forget_run_lookups``); a storage without these methods keeps its own."""
    storage: Any = instance.event_log_storage
    methods = ("has_dynamic_partition", "delete_dynamic_partition", "_get_assets_details")
    if not all(callable(getattr(storage, name, None)) for name in methods):
        return
    lookups = RunLookups()
    storage.has_dynamic_partition = _remembered(storage.has_dynamic_partition, 0, lookups.partitions)
    storage.delete_dynamic_partition = lookups.deleting(storage.delete_dynamic_partition)
    storage._get_assets_details = lookups.assets_details(storage._get_assets_details)
    instance._kb_run_lookups = lookups  # type: ignore[attr-defined]


def forget_run_lookups(instance: dg.DagsterInstance) -> None:
    """Start a run: what the previous run remembered is asked again (``RunLookups``)."""
    lookups: RunLookups | None = getattr(instance, "_kb_run_lookups", None)
    if lookups is not None:
        lookups.forget()
