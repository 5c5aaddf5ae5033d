"""``kb index``: materialize every deterministic asset of one commit through Dagster."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

from kb_assets.cli.progress import TerminalProgress
from kb_assets.cli.session import open_session
from kb_assets.core.errors import BadInputError, CheckFailedError, KbError
from kb_assets.core.summary import IndexStats, gap_line, summary_line
from kb_assets.indexing.progress import set_reporter
from kb_resources.store import reads


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Flags of ``kb index``."""
    p.add_argument(
        "--sha", default="HEAD", metavar="REV", help="commit to index (any commit-ish; default HEAD)"
    )
    group = p.add_mutually_exclusive_group()
    group.add_argument(
        "--parent", default=None, metavar="REV", help="indexed commit to reuse (default: auto)"
    )
    group.add_argument("--full", action="store_true", help="re-parse everything; reuse nothing")


def run(args: argparse.Namespace) -> int:
    """Index the commit, print the summary line and one line per gap."""
    session = open_session(args)
    sha = session.repo.resolve(args.sha)
    if args.parent is not None:
        _check_parent(session, args.parent)
    from kb_assets.cli.instance import open_instance  # Dagster is imported only once input is valid
    from kb_assets.definitions import INDEX_JOB, build_definitions

    instance = open_instance(session.settings, session.store)
    if not instance.has_dynamic_partition("commits", sha):
        instance.add_dynamic_partitions("commits", [sha])
    settings = session.settings.with_db_url(session.store.real_url)
    defs = build_definitions(settings, repo=str(session.repo.root))
    run_config = {
        "ops": {
            op: {"config": {"parent": args.parent or "", "full": args.full}}
            for op in ("commit_tree", "code_spans")
        },
        "loggers": {"console": {"config": {"log_level": "CRITICAL"}}},
    }
    logging.getLogger("dagster").setLevel(logging.ERROR)
    progress = TerminalProgress(sys.stderr)
    set_reporter(progress)
    try:
        result = defs.resolve_job_def(INDEX_JOB).execute_in_process(
            partition_key=sha,
            instance=instance,
            run_config=run_config,
            raise_on_error=True,
            tags={"kb/source": "cli"},
        )
    except KbError:
        raise
    except Exception as err:
        raise _unwrap(err) from err
    finally:
        progress.close()
        set_reporter(None)
    failures = _failed_checks(result)
    with session.store.engine.connect() as conn:
        row = reads.commit_stats(conn, sha)
        gaps = reads.gaps(conn, sha) if row is not None else []
    if row is None:
        raise CheckFailedError(failures or ["the snapshot was not published"])
    print(summary_line(IndexStats(sha=sha, **row)))
    for gap in gaps:
        print(gap_line(gap))
    for failure in failures:
        print(f"kb: check failed: {failure}", file=sys.stderr)
    return 1 if failures else 0


def _check_parent(session: Any, parent: str) -> None:
    base = session.repo.resolve(parent)
    with session.store.engine.connect() as conn:
        if base not in reads.published_commits(conn):
            raise BadInputError(
                f"--parent {parent} ({base[:12]}) is not indexed; index it first or drop --parent"
            )


def _unwrap(err: BaseException) -> BaseException:
    """The knowbase error behind a Dagster wrapper, if there is one."""
    seen: BaseException | None = err
    while seen is not None:
        if isinstance(seen, KbError):
            return seen
        seen = getattr(seen, "user_exception", None) or seen.__cause__
    return err


def _failed_checks(result: Any) -> list[str]:
    failed = []
    for evaluation in result.get_asset_check_evaluations():
        if not evaluation.passed:
            evidence = evaluation.metadata.get("evidence")
            detail = f": {evidence.value}" if evidence is not None else ""
            failed.append(f"{evaluation.asset_key.to_user_string()}.{evaluation.check_name}{detail}")
    return failed
