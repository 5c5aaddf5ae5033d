"""Running knowbase's jobs for one commit through the Dagster Definitions, in this process, on
the persistent instance.

Shared by ``kb index``, ``kb verify`` and ``kb watch`` so every run shows up in ``kb ui`` and goes
through exactly the same assets and checks as a run launched from the UI or a sensor.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from kb_assets.cli.progress import drawn_progress
from kb_assets.cli.session import Session
from kb_assets.core.errors import CheckFailedError, KbError
from kb_assets.core.models import Gap
from kb_assets.core.summary import IndexStats
from kb_assets.indexing.prefetch import prefetching
from kb_assets.run_lookups import forget_run_lookups
from kb_gates.check_process import CHECK_PROCESS
from kb_resources.store import reads
from kb_resources.store.failures import lost_store

SNAPSHOT_ASSET = "knowledge_snapshot"


@dataclass(frozen=True, slots=True)
class CheckReport:
    """What the checks of one or more runs said: failures (ERROR) and warnings (WARN)."""

    failures: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    passed: tuple[str, ...] = ()

    def __add__(self, other: CheckReport) -> CheckReport:
        return CheckReport(
            self.failures + other.failures, self.warnings + other.warnings, self.passed + other.passed
        )


@dataclass(frozen=True, slots=True)
class IndexOutcome:
    """What one index run did: its stats when it published, its gaps and its checks."""

    sha: str
    stats: IndexStats | None
    gaps: tuple[Gap, ...]
    checks: CheckReport = field(default_factory=CheckReport)
    verified: bool = False

    @property
    def failures(self) -> tuple[str, ...]:
        """Checks that failed (a failed blocking check means nothing was published)."""
        return self.checks.failures

    @property
    def published(self) -> bool:
        """Whether this run published the commit's snapshot."""
        return self.stats is not None


def should_verify(session: Session, sha: str, requested: bool | None) -> bool:
    """Whether to run the oracle checks inline: as requested, else when the commit is small."""
    if requested is not None:
        return requested
    return len(session.repo.python_files(sha)) <= session.settings.verify_max_files


def index_commit(
    session: Session,
    sha: str,
    *,
    parent: str | None = None,
    full: bool = False,
    source: str = "cli",
    verify: bool | None = None,
    processes: int = 0,
) -> IndexOutcome:
    """Materialize the commit's partition of every deterministic asset (and their checks), then
    verify it against the oracles when ``verify`` says so (None: when the commit is small).

    ``processes`` > 0 runs the steps under Dagster's multiprocess executor with that many at once
    instead of in this process."""
    from kb_assets.jobs import INDEX_JOB, index_config

    if processes == 0:
        CHECK_PROCESS.start()  # imports pandera and polars beside this process's imports of Dagster
    inline = should_verify(session, sha, verify)
    tags = {"kb/source": source, "kb/verify": "inline" if inline else "deferred"}
    if processes > 0:
        result = run_multiprocess(session, sha, index_config(parent, full), tags, processes)
    else:
        result = run_job(session, INDEX_JOB, sha, index_config(parent, full), tags)
    published = any(
        event.asset_key is not None and event.asset_key.to_user_string() == SNAPSHOT_ASSET
        for event in result.get_asset_materialization_events()
    )
    checks = check_report(result)
    if published and inline:
        checks = checks + verify_commit(session, sha, source=source)
    with session.store.engine.connect() as conn:
        row = reads.commit_stats(conn, sha) if published else None
        gaps = sorted(reads.gaps(conn, sha), key=lambda g: (g.path, g.line or 0, g.reason, g.source))
    stats = IndexStats(sha=sha, **row) if row is not None else None
    return IndexOutcome(sha=sha, stats=stats, gaps=tuple(gaps), checks=checks, verified=published and inline)


def verify_commit(session: Session, sha: str, *, source: str = "cli") -> CheckReport:
    """Run the oracle checks (grimp, griffe) for an indexed commit."""
    from kb_assets.jobs import VERIFY_JOB, quiet_config

    return check_report(run_job(session, VERIFY_JOB, sha, quiet_config(), {"kb/source": source}))


def run_model_pass(
    session: Session, job: str, sha: str, config: dict[str, Any]
) -> tuple[dict[str, Any], CheckReport]:
    """Materialize a model-backed asset (``descriptions`` or ``decisions``) of an indexed commit;
    its metadata (the pass's accounting) and what its ``claims_backed`` check said."""
    from kb_assets.jobs import MODEL_ASSETS, model_config

    result = run_job(session, job, sha, model_config(job, config), {"kb/source": "cli"})
    metadata: dict[str, Any] = {}
    for event in result.get_asset_materialization_events():
        if event.asset_key is not None and event.asset_key.to_user_string() == MODEL_ASSETS[job]:
            metadata = {k: v.value for k, v in event.materialization.metadata.items()}
    return metadata, check_report(result)


def run_job(session: Session, job: str, sha: str, run_config: dict[str, Any], tags: dict[str, str]) -> Any:
    """Execute ``job`` for the commit's partition in this process; knowbase errors come out as such."""
    instance, defs = instance_and_definitions(session)
    forget_run_lookups(instance)  # a session's instance serves one run after another (``kb watch``)
    if not instance.has_dynamic_partition("commits", sha):
        instance.add_dynamic_partitions("commits", [sha])
    logging.getLogger("dagster").setLevel(logging.ERROR)
    run_id = str(uuid.uuid4())
    try:
        with drawn_progress(sys.stderr), kept_interrupt_handlers(), quiet_store_loss(), prefetching():
            # the steps run here (``prefetch``)
            return defs.resolve_job_def(job).execute_in_process(
                partition_key=sha,
                instance=instance,
                run_config=run_config,
                raise_on_error=True,
                tags=tags,
                run_id=run_id,
            )
    except KbError:
        raise
    except Exception as err:
        if type(err).__name__ == "DagsterAssetCheckFailedError":
            raise CheckFailedError(failed_checks(instance, run_id) or [str(err)]) from err
        lost = lost_store(err, session.store.url, session.store.engine.url.password)
        raise (lost or unwrap(err)) from err
    except BaseException as err:
        # Ctrl-C inside a step reaches us as Dagster's own BaseException, not KeyboardInterrupt:
        # turned back into one, it ends the command with its usual one line, not a traceback.
        if type(err).__name__ == "DagsterExecutionInterruptedError":
            raise KeyboardInterrupt from None
        raise


def instance_and_definitions(session: Session) -> tuple[Any, Any]:
    """The persistent instance and the Definitions that ``session``'s runs go through, opened on
    its first run and kept on the session. ``kb watch`` runs the index job once per commit:
    opening both again each time cost ~0.07 s before the run, and the fresh instance's storages
    opened their pooled connections again during it."""
    if session.runs is None:
        from kb_assets.cli.instance import open_instance  # Dagster is imported only when a job runs
        from kb_assets.definitions import build_definitions

        instance = open_instance(session.settings, session.store)
        defs = build_definitions(
            session.settings.with_db_url(session.store.real_url), repo=str(session.repo.root)
        )
        session.runs = (instance, defs)
    return session.runs


@contextlib.contextmanager
def kept_interrupt_handlers(sigterm: Callable[[int, FrameType | None], Any] | None = None) -> Iterator[None]:
    """Give SIGINT and SIGTERM their handlers back on leaving; inside, SIGTERM runs ``sigterm``
    when given.

    A Dagster run leaves both set to what SIGINT did when it began. A process started with SIGINT
    ignored (``kb watch &`` from a script, ``nohup``) then ignored SIGTERM too, for good: after its
    first run a ``kb watch`` could only be killed. (Handlers can only be set from the main thread;
    one that reads as None was set from C and cannot be restored.)
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    if sigterm is not None:
        signal.signal(signal.SIGTERM, sigterm)
    try:
        yield
    finally:
        for sig, handler in saved.items():
            if handler is not None:
                signal.signal(sig, handler)


def failed_checks(instance: Any, run_id: str) -> list[str]:
    """``asset.check: evidence`` of every failed ERROR-severity check of a run, from its event log
    (a blocking failure ends ``execute_in_process`` with an exception, not a result to read)."""
    from dagster import DagsterEventType

    lines = []
    for entry in instance.all_logs(run_id, of_type=DagsterEventType.ASSET_CHECK_EVALUATION):
        evaluation = entry.dagster_event.event_specific_data
        if evaluation.passed or evaluation.severity.value == "WARN":
            continue
        lines.append(_check_line(evaluation))
    return lines


def _check_name(evaluation: Any) -> str:
    return f"{evaluation.asset_key.to_user_string()}.{evaluation.check_name}"


def _check_line(evaluation: Any) -> str:
    """``asset.check: evidence`` of one check evaluation (from a run result or an event log)."""
    evidence = evaluation.metadata.get("evidence")
    name = _check_name(evaluation)
    return f"{name}: {evidence.value}" if evidence is not None else name


@contextlib.contextmanager
def quiet_store_loss() -> Iterator[None]:
    """Inside, a store that goes away mid-run is not narrated by the libraries that notice it:
    the run ends as one exit-3 line instead (``lost_store``).

    dagster-postgres logs a warning with multi-line driver text on the root logger per reconnect
    retry; SQLAlchemy's pool logs "Exception during reset or similar" with a full traceback when
    it hands back a connection whose server is gone (whether it does is a race with the kill).
    Neither says anything the exit-3 line does not.
    """
    root = logging.getLogger()
    pool = logging.getLogger("sqlalchemy.pool")
    level = pool.level
    root.addFilter(_quiet_reconnects)
    pool.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        pool.setLevel(level)
        root.removeFilter(_quiet_reconnects)


def _quiet_reconnects(record: logging.LogRecord) -> bool:
    """Drop dagster-postgres's reconnect warnings (logged on the root logger itself)."""
    return not (record.name == "root" and "dagster_postgres" in record.pathname)


def run_multiprocess(
    session: Session, sha: str, run_config: dict[str, Any], tags: dict[str, str], processes: int
) -> Any:
    """Execute the multiprocess index job for the commit: each step in its own process, at most
    ``processes`` at once. The step processes rebuild the Definitions from the environment, so it
    names the repository and the store's real URL (the embedded server is already running)."""
    import os

    import dagster as dg

    from kb_assets.cli.instance import open_instance
    from kb_assets.cli.step_start import start_method

    instance = open_instance(session.settings, session.store)
    if not instance.has_dynamic_partition("commits", sha):
        instance.add_dynamic_partitions("commits", [sha])
    os.environ.update({"KB_REPO": str(session.repo.root), "KB_DB_URL": session.store.real_url})
    from kb_assets.definitions import multiprocess_index_job

    executor = {"max_concurrent": processes, "start_method": start_method(os.environ)}
    config = {**run_config, "execution": {"config": executor}}
    with (
        kept_interrupt_handlers(),
        quiet_store_loss(),
        dg.execute_job(
            dg.reconstructable(multiprocess_index_job),
            instance=instance,
            run_config=config,
            tags={**tags, "dagster/partition": sha},
            raise_on_error=False,
        ) as result,
    ):
        if not result.success:
            if _interrupted(result.all_events):
                raise KeyboardInterrupt  # Ctrl-C: Dagster stopped the steps and failed the run
            failed = [e.message or "" for e in result.all_events if e.is_failure]
            raise RuntimeError("; ".join(failed[:3]) or "the multiprocess index run failed")
        return result


def _interrupted(events: Iterable[Any]) -> bool:
    """Whether a run failed because this process was interrupted: the multiprocess executor
    catches the interrupt, stops its step processes and ends the run as an unexpected
    termination (``RunFailureReason``, which Dagster does not export; read by its value), where
    the in-process executor lets the interrupt through."""
    reasons = (getattr(e.event_specific_data, "failure_reason", None) for e in events if e.is_failure)
    return any(getattr(reason, "value", None) == "UNEXPECTED_TERMINATION" for reason in reasons)


def unwrap(err: BaseException) -> BaseException:
    """The knowbase error behind a Dagster wrapper, if there is one."""
    seen: BaseException | None = err
    while seen is not None:
        if isinstance(seen, KbError):
            return seen
        seen = getattr(seen, "user_exception", None) or seen.__cause__
    return err


def check_report(result: Any) -> CheckReport:
    """``asset.check: evidence`` of every check of the run, split by outcome and severity."""
    failures: list[str] = []
    warnings: list[str] = []
    passed: list[str] = []
    for evaluation in result.get_asset_check_evaluations():
        if evaluation.passed:
            passed.append(_check_name(evaluation))
            continue
        (warnings if evaluation.severity.value == "WARN" else failures).append(_check_line(evaluation))
    return CheckReport(tuple(failures), tuple(warnings), tuple(passed))
