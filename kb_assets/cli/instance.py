"""The persistent Dagster instance: its storage lives in the knowledge store's PostgreSQL.

``DAGSTER_HOME`` holds one ``dagster.yaml`` whose storage URL comes from ``KB_DAGSTER_PG_URL``,
set per repository before the instance is opened, so each repository's runs live in its own
database (schema ``dagster``) while the UI, the CLI and the sensor share one configuration.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from kb_assets.instance_tuning import tune_instance
from kb_resources.settings import Settings
from kb_resources.store.engine import Store
from kb_resources.store.session_locks import DAGSTER_INSTANCE_LOCK_KEY, session_lock

if TYPE_CHECKING:
    import dagster as dg

MARKER = "# written by knowbase"
DAGSTER_YAML = f"""{MARKER}: Dagster instance storage in the repository's knowledge store.
storage:
  postgres:
    postgres_url:
      env: KB_DAGSTER_PG_URL
telemetry:
  enabled: false
nux:
  enabled: false
run_coordinator:
  module: dagster._core.run_coordinator
  class: QueuedRunCoordinator
  config:
    dequeue_interval_seconds: 1
"""
"""The UI, the daemon and ``kb`` share it. The daemon starts a queued run (one ``branch_sensor``
requested, say) within a second instead of Dagster's default five."""


CLI_YAML_NAME = "knowbase-cli.yaml"
CLI_YAML = (
    DAGSTER_YAML
    + """compute_logs:
  module: dagster._core.storage.noop_compute_log_manager
  class: NoOpComputeLogManager
"""
)
"""The configuration of the runs ``kb`` itself executes: the same storage, no compute-log capture.

Capturing a run's stdout and stderr makes Dagster start a ``tail`` and a Python watcher process per
stream, in ``kb``'s process group: a terminal's Ctrl-C reached the watchers, and each printed a
``KeyboardInterrupt`` traceback after ``kb``'s one line; and ``kb``'s progress line reached the
terminal through ``tail``'s one-second polling instead of at once. Runs launched from ``kb ui`` or
by its daemon read ``dagster.yaml`` and keep Dagster's compute logs."""


def dagster_environment(settings: Settings, store: Store) -> dict[str, str]:
    """Environment variables that point Dagster at this repository's store."""
    return {"DAGSTER_HOME": str(settings.dagster_home), "KB_DAGSTER_PG_URL": store.dagster_storage_url()}


def ensure_dagster_home(home: Path) -> str:
    """Create ``DAGSTER_HOME`` with knowbase's ``dagster.yaml`` unless the user wrote their own; the
    name of the file ``kb``'s own runs read: ``CLI_YAML_NAME`` beside knowbase's ``dagster.yaml``,
    else the user's ``dagster.yaml`` as it is."""
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    current = config.read_text() if config.exists() else None
    if current is None or (current.startswith(MARKER) and current != DAGSTER_YAML):
        config.write_text(DAGSTER_YAML)
    elif not current.startswith(MARKER):
        return config.name
    cli = home / CLI_YAML_NAME
    if not cli.exists() or cli.read_text() != CLI_YAML:
        cli.write_text(CLI_YAML)
    return cli.name


def open_instance(settings: Settings, store: Store) -> dg.DagsterInstance:
    """The persistent instance for this repository (runs show up in ``kb ui``)."""
    import dagster as dg

    config = ensure_dagster_home(settings.dagster_home)
    os.environ.update(dagster_environment(settings, store))
    # Opening the storage of a fresh database creates Dagster's tables and then runs its data
    # migrations over the runs already there; a process that found no tables while another one
    # created them and started a run crashed in that migration (dagster-postgres 0.29: "Attempted
    # to resolve undefined DagsterInstance weakref"). Processes take turns, as for our own schema.
    with store.engine.connect() as conn, session_lock(conn, DAGSTER_INSTANCE_LOCK_KEY):
        instance = dg.DagsterInstance.from_config(str(settings.dagster_home), config_filename=config)
    tune_instance(instance)
    return instance
