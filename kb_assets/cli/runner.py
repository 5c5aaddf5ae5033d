"""Indexing one commit through the Dagster Definitions, in this process, on the persistent instance.

Shared by ``kb index`` and ``kb watch`` so both produce runs that show up in ``kb ui`` and go
through exactly the same assets and checks as a run launched from the UI or the sensor.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass
from typing import Any

from kb_assets.cli.progress import TerminalProgress
from kb_assets.cli.session import Session
from kb_assets.core.errors import KbError
from kb_assets.core.models import Gap
from kb_assets.core.summary import IndexStats
from kb_assets.indexing.progress import set_reporter
from kb_resources.store import reads

SNAPSHOT_ASSET = "knowledge_snapshot"


@dataclass(frozen=True, slots=True)
class IndexOutcome:
    """What one index run did: its stats when it published, its gaps and failed checks."""

    sha: str
    stats: IndexStats | None
    gaps: tuple[Gap, ...]
    failures: tuple[str, ...]

    @property
    def published(self) -> bool:
        """Whether this run published the commit's snapshot."""
        return self.stats is not None


def index_commit(
    session: Session, sha: str, *, parent: str | None = None, full: bool = False, source: str = "cli"
) -> IndexOutcome:
    """Materialize the commit's partition of every deterministic asset (and their checks)."""
    from kb_assets.cli.instance import open_instance  # Dagster is imported only when indexing
    from kb_assets.definitions import build_definitions
    from kb_assets.jobs import INDEX_JOB, index_config

    instance = open_instance(session.settings, session.store)
    if not instance.has_dynamic_partition("commits", sha):
        instance.add_dynamic_partitions("commits", [sha])
    settings = session.settings.with_db_url(session.store.real_url)
    defs = build_definitions(settings, repo=str(session.repo.root))
    logging.getLogger("dagster").setLevel(logging.ERROR)
    progress = TerminalProgress(sys.stderr)
    set_reporter(progress)
    try:
        result = defs.resolve_job_def(INDEX_JOB).execute_in_process(
            partition_key=sha,
            instance=instance,
            run_config=index_config(parent, full),
            raise_on_error=True,
            tags={"kb/source": source},
        )
    except KbError:
        raise
    except Exception as err:
        raise unwrap(err) from err
    finally:
        progress.close()
        set_reporter(None)
    return _outcome(session, sha, result)


def _outcome(session: Session, sha: str, result: Any) -> IndexOutcome:
    published = any(
        event.asset_key is not None and event.asset_key.to_user_string() == SNAPSHOT_ASSET
        for event in result.get_asset_materialization_events()
    )
    with session.store.engine.connect() as conn:
        row = reads.commit_stats(conn, sha) if published else None
        gaps = sorted(reads.gaps(conn, sha), key=lambda g: (g.path, g.line or 0, g.reason, g.source))
    stats = IndexStats(sha=sha, **row) if row is not None else None
    return IndexOutcome(sha=sha, stats=stats, gaps=tuple(gaps), failures=tuple(failed_checks(result)))


def unwrap(err: BaseException) -> BaseException:
    """The knowbase error behind a Dagster wrapper, if there is one."""
    seen: BaseException | None = err
    while seen is not None:
        if isinstance(seen, KbError):
            return seen
        seen = getattr(seen, "user_exception", None) or seen.__cause__
    return err


def failed_checks(result: Any) -> list[str]:
    """``asset.check: evidence`` for every check of the run that did not pass."""
    failed = []
    for evaluation in result.get_asset_check_evaluations():
        if not evaluation.passed:
            evidence = evaluation.metadata.get("evidence")
            detail = f": {evidence.value}" if evidence is not None else ""
            failed.append(f"{evaluation.asset_key.to_user_string()}.{evaluation.check_name}{detail}")
    return failed
