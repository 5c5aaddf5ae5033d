"""What Dagster's instance storage is asked again and again, answered from memory: within a
process (``remembered``) or within one run (``RunLookups``); ``kb_assets.instance_tuning`` puts
them on the instance ``kb`` opens.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import dagster as dg


def remembered(
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

    Two more answers change within a run, but only when the run itself writes: the newest
    materialization of an asset at a partition (each check result looks up its target's, three
    checks per extractor; ``kb_assets.assets.metadata`` and the snapshot's proof look them up
    too: ~40 look-ups a one-file Django run, ~1.3 ms each) and the data-version tags of an
    input's newest materialization per partition (18 a run: each step's inputs). Each is kept
    from one look-up to the next until this instance stores a materialization or an observation
    of that asset (``storing``); an answer read while such a write was stored is not kept.
    """

    def __init__(self) -> None:
        self.partitions: set[tuple[object, ...]] = set()
        """(partitions definition name, partition key) of each partition found (``remembered``)."""
        self.details: dict[str, object] = {}
        self.newest: dict[tuple[object, ...], Any] = {}
        """(asset key, partition keys) -> the newest materialization there (``newest_materialization``)."""
        self.tags: dict[tuple[object, ...], Any] = {}
        """``get_latest_tags_by_partition``'s arguments -> its answer (``latest_tags``)."""
        self.writes: dict[object, int] = {}
        """Asset key -> how many of its materializations and observations this instance stored."""

    def forget(self) -> None:
        """Ask the storage again from now on (a new run starts)."""
        self.partitions.clear()
        self.details.clear()
        self.newest.clear()
        self.tags.clear()

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

    def newest_materialization(self, fetch: Callable[..., Any]) -> Callable[..., Any]:
        """``fetch_materializations``, keeping the answer to "the newest one of this asset at these
        partitions" (a filter with nothing else set, one record, newest first, no cursor)."""

        def fetch_materializations(
            records_filter: Any, limit: int, cursor: str | None = None, ascending: bool = False
        ) -> Any:
            def ask() -> Any:
                return fetch(records_filter, limit, cursor, ascending)

            key = _newest_key(records_filter) if limit == 1 and cursor is None and not ascending else None
            return ask() if key is None else self._kept(self.newest, key, ask)

        return fetch_materializations

    def latest_tags(self, get: Callable[..., Any]) -> Callable[..., Any]:
        """``get_latest_tags_by_partition``, keeping its answers when no cursor bounds them."""

        def get_latest_tags_by_partition(  # noqa: PLR0917  Dagster's signature, positional in its callers
            asset_key: Any,
            event_type: Any,
            tag_keys: Sequence[str],
            asset_partitions: Sequence[str] | None = None,
            before_cursor: int | None = None,
            after_cursor: int | None = None,
        ) -> Any:
            def ask() -> Any:
                return get(asset_key, event_type, tag_keys, asset_partitions, before_cursor, after_cursor)

            if before_cursor is not None or after_cursor is not None:
                return ask()
            partitions = None if asset_partitions is None else tuple(asset_partitions)
            return self._kept(self.tags, (asset_key, event_type, tuple(tag_keys), partitions), ask)

        return get_latest_tags_by_partition

    def _kept(
        self, memo: dict[tuple[object, ...], Any], key: tuple[object, ...], ask: Callable[[], Any]
    ) -> Any:
        """``memo[key]``, else ``ask()``, kept unless ``key``'s asset (its first item) was written
        meanwhile."""
        if key in memo:
            return memo[key]
        writes = self.writes.get(key[0], 0)
        found = ask()
        if self.writes.get(key[0], 0) == writes:
            memo[key] = found
        return found

    def storing(self, store: Callable[[Any], None]) -> Callable[[Any], None]:
        """``store_event``, forgetting what a materialization or an observation it stored changes,
        once it is stored (or failed to be)."""

        def store_event(event: Any) -> None:
            try:
                store(event)
            finally:
                self._stored(event)

        return store_event

    def storing_batch(self, store: Callable[[Sequence[Any]], None]) -> Callable[[Sequence[Any]], None]:
        """``store_event_batch``, as ``storing`` for each of its events (an event is a named tuple:
        only the batch is iterated)."""

        def store_event_batch(events: Sequence[Any]) -> None:
            try:
                store(events)
            finally:
                for event in events:
                    self._stored(event)

        return store_event_batch

    def wiping(self, wipe: Callable[..., None]) -> Callable[..., None]:
        """``wipe_asset`` or ``wipe_asset_partitions``, forgetting what it changes of the asset (its
        first argument), its wipe details included."""

        def wipe_asset(asset_key: Any, *partitions: Any) -> None:
            try:
                wipe(asset_key, *partitions)
            finally:
                self.details.pop(asset_key.to_string(), None)
                self._changed(asset_key)

        return wipe_asset

    def _stored(self, event: Any) -> None:
        dagster_event = getattr(event, "dagster_event", None)
        asset = getattr(dagster_event, "asset_key", None)
        if asset is not None and getattr(dagster_event, "event_type_value", None) in CHANGES_LOOKUPS:
            self._changed(asset)

    def _changed(self, asset: object) -> None:
        """Forget the newest materializations and latest tags of ``asset``, and any answer about it
        being read meanwhile (``_kept``). Check threads read while the run's thread stores: the
        memos' keys are copied (at once, under the interpreter lock) before any is deleted."""
        self.writes[asset] = self.writes.get(asset, 0) + 1
        for memo in (self.newest, self.tags):
            for key in [key for key in list(memo) if key[0] == asset]:
                memo.pop(key, None)


CHANGES_LOOKUPS = frozenset({"ASSET_MATERIALIZATION", "ASSET_OBSERVATION"})
"""The stored events after which an asset's newest materialization or latest tags may differ."""

UNSET_IN_NEWEST = (
    "after_timestamp",
    "before_timestamp",
    "after_storage_id",
    "before_storage_id",
    "storage_ids",
    "tags",
)
"""The fields of an ``AssetRecordsFilter`` that a look-up of the newest materialization leaves unset."""


def _newest_key(records_filter: Any) -> tuple[object, ...] | None:
    """(asset key, partition keys) of a filter that names nothing else, else None."""
    asset = getattr(records_filter, "asset_key", None)
    if asset is None or any(getattr(records_filter, name, None) is not None for name in UNSET_IN_NEWEST):
        return None
    partitions = records_filter.asset_partitions
    return (asset, None if partitions is None else tuple(partitions))


def remember_run_lookups(instance: dg.DagsterInstance) -> None:
    """Give the event log storage a ``RunLookups`` (kept on the instance for
    ``forget_run_lookups``); a storage without these methods keeps its own."""
    storage: Any = instance.event_log_storage
    methods = (
        "has_dynamic_partition",
        "delete_dynamic_partition",
        "_get_assets_details",
        "fetch_materializations",
        "get_latest_tags_by_partition",
        "store_event",
        "store_event_batch",
        "wipe_asset",
        "wipe_asset_partitions",
    )
    if not all(callable(getattr(storage, name, None)) for name in methods):
        return
    lookups = RunLookups()
    storage.has_dynamic_partition = remembered(storage.has_dynamic_partition, 0, lookups.partitions)
    storage.delete_dynamic_partition = lookups.deleting(storage.delete_dynamic_partition)
    storage._get_assets_details = lookups.assets_details(storage._get_assets_details)
    storage.fetch_materializations = lookups.newest_materialization(storage.fetch_materializations)
    storage.get_latest_tags_by_partition = lookups.latest_tags(storage.get_latest_tags_by_partition)
    storage.store_event = lookups.storing(storage.store_event)
    storage.store_event_batch = lookups.storing_batch(storage.store_event_batch)
    storage.wipe_asset = lookups.wiping(storage.wipe_asset)
    storage.wipe_asset_partitions = lookups.wiping(storage.wipe_asset_partitions)
    instance._kb_run_lookups = lookups  # type: ignore[attr-defined]


def forget_run_lookups(instance: dg.DagsterInstance) -> None:
    """Start a run: what the previous run remembered is asked again (``RunLookups``)."""
    lookups: RunLookups | None = getattr(instance, "_kb_run_lookups", None)
    if lookups is not None:
        lookups.forget()
