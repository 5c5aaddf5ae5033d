"""``kb``'s own runs read a configuration without compute-log capture; ``kb ui`` and its daemon read
``dagster.yaml``, with it; both see the same runs; a user's own ``dagster.yaml`` is left alone and
used by both; processes opening a fresh instance take turns."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import sqlalchemy as sa
from dagster._core.run_coordinator import QueuedRunCoordinator

from kb_assets.cli.instance import CLI_YAML, CLI_YAML_NAME, DAGSTER_YAML, ensure_dagster_home, open_instance
from kb_assets.run_lookups import RunLookups, forget_run_lookups
from kb_resources.git.repo import GitRepo
from kb_resources.settings import Settings, load_settings
from kb_resources.store.engine import Store, open_store
from kb_resources.store.session_locks import DAGSTER_INSTANCE_LOCK_KEY
from tests.gitfixtures import commit_tree, init_repo
from tests.kbfixtures import KbEnv
from tests.storefixtures import contending_processes


def test_knowbase_writes_both_configurations(tmp_path: Path) -> None:
    home = tmp_path / "dagster"
    assert ensure_dagster_home(home) == CLI_YAML_NAME
    assert (home / "dagster.yaml").read_text() == DAGSTER_YAML
    assert (home / CLI_YAML_NAME).read_text() == CLI_YAML
    assert CLI_YAML.startswith(DAGSTER_YAML)
    assert "NoOpComputeLogManager" in CLI_YAML
    assert "compute_logs" not in DAGSTER_YAML
    (home / CLI_YAML_NAME).write_text("stale")
    assert ensure_dagster_home(home) == CLI_YAML_NAME
    assert (home / CLI_YAML_NAME).read_text() == CLI_YAML


def test_a_users_own_configuration_is_used_as_it_is(tmp_path: Path) -> None:
    home = tmp_path / "dagster"
    home.mkdir()
    own = "telemetry:\n  enabled: false\n"
    (home / "dagster.yaml").write_text(own)
    assert ensure_dagster_home(home) == "dagster.yaml"
    assert (home / "dagster.yaml").read_text() == own
    assert not (home / CLI_YAML_NAME).exists()


@contextmanager
def _indexed(kb_env: KbEnv, tmp_path: Path) -> Iterator[tuple[Settings, Store]]:
    """A repository of one commit indexed by ``kb index``; its settings and open store."""
    repo = init_repo(tmp_path / "repo")
    commit_tree(repo, {"a.py": "import os\n\n\ndef f():\n    return os.sep\n"}, "first")
    assert kb_env.kb("index", repo).code == 0
    settings = load_settings(kb_env.environ)
    store = open_store(settings, GitRepo.open(repo).key())
    try:
        yield settings, store
    finally:
        store.close()


def test_cli_runs_capture_nothing_and_show_in_the_ui_s_instance(kb_env: KbEnv, tmp_path: Path) -> None:
    with _indexed(kb_env, tmp_path) as (settings, store):
        cli = open_instance(settings, store)
        ui = dg.DagsterInstance.from_config(str(settings.dagster_home))
        assert type(cli.compute_log_manager).__name__ == "NoOpComputeLogManager"
        assert type(ui.compute_log_manager).__name__ == "LocalComputeLogManager"
        cli_runs = [r.dagster_run.run_id for r in cli.get_run_records()]
        assert cli_runs
        assert [r.dagster_run.run_id for r in ui.get_run_records()] == cli_runs
        assert not list((settings.dagster_home / "storage").glob("**/*.out"))
        coordinator = ui.run_coordinator
        assert isinstance(coordinator, QueuedRunCoordinator)
        assert coordinator.dequeue_interval_seconds == 1


OPEN_INSTANCE_IN_SUBPROCESS = """
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from kb_assets.cli.instance import open_instance
from kb_resources.settings import Settings
from kb_resources.store.engine import open_store
home = Path(sys.argv[2])
settings = Settings(kb_home=home, dagster_home=home / "dagster", db_url=sys.argv[1])
store = open_store(settings, "test")
open_instance(settings, store).dispose()
store.close()
"""


def test_processes_opening_a_fresh_instance_take_turns(
    blank_database: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Two processes opening Dagster's storage on a never-used database wait for one lock, so one
    creates the tables (and runs Dagster's data migrations over the runs there) before the other
    looks: run at once, the second could crash in those migrations over the first's new run. The
    test holds the lock until both are queued on it, then both succeed."""
    homes = [tmp_path_factory.mktemp("kb") for _ in range(2)]
    script, key = OPEN_INSTANCE_IN_SUBPROCESS, DAGSTER_INSTANCE_LOCK_KEY
    codes = contending_processes(blank_database, key, script, homes)
    assert codes == [0, 0]


def test_the_instance_asks_the_catalog_once_for_each_table_it_has(kb_env: KbEnv, tmp_path: Path) -> None:
    """Dagster's storages ask whether their tables and columns exist on every use; the instance
    ``kb`` opens asks once for each that exists, and again each time for one that does not."""
    with _indexed(kb_env, tmp_path) as (settings, store):
        instance = open_instance(settings, store)
        events: Any = instance.event_log_storage  # dagster-postgres adds has_table
        statements: list[str] = []
        engine = events._engine
        sa.event.listen(engine, "before_cursor_execute", lambda *a: statements.append(a[2]))

        def catalog() -> int:
            return sum("pg_class" in s for s in statements)

        assert events.has_table("dynamic_partitions")
        first = catalog()
        assert first == 1
        assert events.has_table("dynamic_partitions")
        assert instance.get_dynamic_partitions("commits")  # checks the table through the storage
        assert catalog() == first
        assert not events.has_table("no_such_table")
        assert not events.has_table("no_such_table")
        assert catalog() == first + 2
        instance.dispose()


def test_a_run_asks_once_for_its_partition_and_its_assets_wipe_details(kb_env: KbEnv, tmp_path: Path) -> None:
    """Within a run, the partition and each asset's wipe details are asked once (``RunLookups``);
    a partition not found, one deleted through the instance and everything after
    ``forget_run_lookups`` (a new run) are asked again."""
    with _indexed(kb_env, tmp_path) as (settings, store):
        instance = open_instance(settings, store)
        events: Any = instance.event_log_storage
        statements: list[str] = []
        sa.event.listen(events._engine, "before_cursor_execute", lambda *a: statements.append(a[2]))

        def asked(table: str) -> int:
            return sum(s.startswith("SELECT") and f"FROM {table}" in s for s in statements)

        sha = instance.get_dynamic_partitions("commits")[0]
        forget_run_lookups(instance)
        statements.clear()
        for _ in range(3):
            assert instance.has_dynamic_partition("commits", sha)
        assert asked("dynamic_partitions") == 1
        assert not instance.has_dynamic_partition("commits", "0" * 40)
        assert not instance.has_dynamic_partition("commits", "0" * 40)
        assert asked("dynamic_partitions") == 3

        keys = [dg.AssetKey("call_edges"), dg.AssetKey("no_such_asset")]
        first = events._get_assets_details(keys)
        assert events._get_assets_details(keys[::-1]) == first[::-1]
        assert events._get_assets_details([keys[0]]) == first[:1]
        assert asked("asset_keys") == 1

        forget_run_lookups(instance)
        assert instance.has_dynamic_partition("commits", sha)
        assert events._get_assets_details(keys) == first
        assert (asked("dynamic_partitions"), asked("asset_keys")) == (4, 2)

        instance.delete_dynamic_partition("commits", sha)
        assert not instance.has_dynamic_partition("commits", sha)
        assert asked("dynamic_partitions") == 5
        instance.dispose()


def test_a_run_asks_once_for_the_newest_materialization_until_it_stores_one(
    kb_env: KbEnv, tmp_path: Path
) -> None:
    """The newest materialization of an asset at a partition and its latest data-version tags are
    read once within a run (``RunLookups``): again once the instance stores a materialization of
    that asset (the new one is answered, not the old) or wipes it, and after ``forget_run_lookups``;
    a look-up with bounds is never kept."""
    with _indexed(kb_env, tmp_path) as (settings, store):
        instance = open_instance(settings, store)
        events: Any = instance.event_log_storage
        statements: list[str] = []
        sa.event.listen(events._engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
        sha = instance.get_dynamic_partitions("commits")[0]
        asset, other = dg.AssetKey("call_edges"), dg.AssetKey("import_edges")

        def newest(key: dg.AssetKey = asset) -> int:
            records = instance.fetch_materializations(
                dg.AssetRecordsFilter(asset_key=key, asset_partitions=[sha]), limit=1
            ).records
            return records[0].storage_id

        def tags() -> Any:
            return events.get_latest_tags_by_partition(
                asset,
                dg.DagsterEventType.ASSET_MATERIALIZATION,
                ["dagster/data_version"],
                asset_partitions=[sha],
            )

        def reads() -> int:
            return sum(s.startswith("SELECT") and "event_logs" in s for s in statements)

        forget_run_lookups(instance)
        statements.clear()
        first, first_tags = newest(), tags()
        assert first_tags[sha]["dagster/data_version"]
        assert (newest(), tags(), newest(other) != first) == (first, first_tags, True)
        assert reads() == 3
        bounded = dg.AssetRecordsFilter(asset_key=asset, asset_partitions=[sha], before_storage_id=first + 1)
        for _ in range(2):
            assert instance.fetch_materializations(bounded, limit=1).records[0].storage_id == first
        assert reads() == 5

        instance.report_runless_asset_event(
            dg.AssetMaterialization(asset_key=asset, partition=sha, tags={"dagster/data_version": "new"})
        )
        statements.clear()
        second = newest()
        assert second > first
        assert tags()[sha]["dagster/data_version"] == "new"
        assert (newest(), newest(other)) == (second, newest(other))
        assert reads() == 2  # the other asset's answer was kept

        forget_run_lookups(instance)
        assert newest() == second
        assert reads() == 3
        instance.wipe_assets([asset])
        assert not instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=asset, asset_partitions=[sha]), limit=1
        ).records
        instance.dispose()


def test_an_answer_read_while_its_asset_was_written_is_not_kept() -> None:
    """A check thread's look-up that overlaps the run's thread storing a materialization of the
    same asset answers what it read, but the next look-up asks again."""
    lookups = RunLookups()
    asked: list[str] = []

    def fetch(records_filter: Any, limit: int, cursor: str | None, ascending: bool) -> str:
        asked.append(records_filter.asset_key.to_user_string())
        if len(asked) == 1:  # the run stores a materialization while this reads
            lookups._changed(records_filter.asset_key)
        return f"answer {len(asked)}"

    newest = lookups.newest_materialization(fetch)
    wanted = dg.AssetRecordsFilter(asset_key=dg.AssetKey("call_edges"), asset_partitions=["a" * 40])
    assert [newest(wanted, 1), newest(wanted, 1), newest(wanted, 1)] == ["answer 1", "answer 2", "answer 2"]
    assert newest(wanted, 2) == "answer 3"
    assert len(asked) == 3
