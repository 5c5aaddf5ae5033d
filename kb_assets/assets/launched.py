"""What a run launched by Dagster's webserver or daemon sets in the process Dagster started for it.

``kb`` sets up its own process before any run (the collector's thresholds, ``kb_assets.core.
collector``), and ``kb index`` or ``kb watch`` executes its runs in a process with one thread, so
resolution may fork copies there (``kb_assets.core.forked``). A run launched from the UI, by
``branch_sensor`` or by ``verify_after_index`` executes instead in a process the code server
started: it has the default thresholds, Dagster's threads beside the main one stopped every fork,
and its instance opened a connection for every storage call and asked the catalog again each time
whether Dagster's tables exist (``kb_assets.instance_tuning``). Together they made the call-edge
step of such a run about half again as long as a ``kb watch`` one on Django
(``bench/ui_latency.py``).

The settings are process-wide, so they are taken only in a process that exists for the run: one
Dagster launched (the run has a code location as its origin), never in a process that embeds
knowbase and executes a run in itself (``execute_in_process``: the run has no origin). Forks are
allowed beside Dagster's threads only when the run's steps execute in that process (the
in-process executor): the step processes of the multiprocess executor are left as they were
(``forked.allow_dagster_threads``).
"""

from __future__ import annotations

import dagster as dg

from kb_assets.core.collector import tune_collector
from kb_assets.core.forked import allow_dagster_threads
from kb_assets.instance_tuning import tune_instance

IN_PROCESS = dg.in_process_executor.name


def launched_by_dagster(run: dg.DagsterRun) -> bool:
    """Whether ``run`` was launched from a code location (the UI, a sensor, a schedule) into a
    process Dagster started for it, rather than executed in the calling process."""
    return run.remote_job_origin is not None


def forks_beside_dagster(run: dg.DagsterRun, executor: str) -> bool:
    """Whether the process executing ``run`` under the executor named ``executor`` may fork beside
    Dagster's threads: a launched run whose steps all execute in its own process."""
    return launched_by_dagster(run) and executor == IN_PROCESS


ADOPTED = "knowbase process settings: collector thresholds, pooled instance storage{forks}"
"""The message a launched run logs at its first step when it takes the settings (once a process)."""

_adopted = False


def adopt_launched_run(context: dg.AssetExecutionContext) -> None:
    """Take knowbase's process settings in a process Dagster started for this step's run (module
    docstring), and say so once in the run's log; nothing otherwise. Called at the start of every
    step of the index and verify jobs: a run launched for a subset of the assets starts with any
    of them."""
    global _adopted  # noqa: PLW0603 - the settings are process-wide
    run = context.run
    if _adopted or not launched_by_dagster(run):
        return
    _adopted = True
    tune_collector()
    tune_instance(context.instance)
    forks = forks_beside_dagster(run, context.job_def.executor_def.name)
    if forks:
        allow_dagster_threads()
    context.log.info(ADOPTED.format(forks=", forks beside Dagster's threads" if forks else ""))
