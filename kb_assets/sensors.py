"""``branch_sensor``: follow local branch refs and index each new first-parent commit.

The decisions (which commits, catch-up limit, force-push) are ``kb_assets.indexing.follow``'s,
shared with ``kb watch``. The cursor (branch -> last tip taken) lives in the sensor cursor and in
the store's ``branch_ref`` table, so a restarted daemon, or ``kb watch`` on the same store,
resumes where the other stopped.
"""

import json

import dagster as dg

from kb_assets.indexing.follow import plan_branches, watched_branches
from kb_assets.jobs import (
    INDEX_JOB,
    index_config,
    index_job,
    index_multiprocess_job,
    quiet_config,
    verify_job,
)
from kb_assets.partitions import commits
from kb_resources.resources import KnowbaseResource
from kb_resources.store import reads, writes

SENSOR_INTERVAL_S = 5
"""Seconds between two looks at the branches: Dagster's daemon visits its sensors every 5 s at
most, so a shorter interval would change nothing. A new commit waits 0-10 s before its run is
requested (the daemon's loop sleeps 5 s less its own duration, so a look due a moment later waits
for the next pass), against up to ~35 s at Dagster's default of 30 s (``bench/ui_latency.py``). A
look reads the refs and the published commits, and writes nothing unless a branch moved."""


@dg.sensor(
    name="branch_sensor",
    job_name=INDEX_JOB,
    minimum_interval_seconds=SENSOR_INTERVAL_S,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Registers each new first-parent commit of the watched branches as a partition; indexes it.",
)
def branch_sensor(context: dg.SensorEvaluationContext, kb: KnowbaseResource) -> dg.SensorResult:
    """Plan every watched branch and request one run per new commit, oldest first."""
    repo, engine = kb.git(), kb.engine()
    with engine.connect() as conn:
        published = set(reads.published_commits(conn))
        stored = reads.branches(conn)
    cursors = {**stored, **json.loads(context.cursor or "{}")}
    branches = watched_branches(repo, [b for b in kb.watch_branches.split(",") if b])
    plans = plan_branches(repo, branches, cursors, published, max_catchup=kb.max_catchup)
    requests: list[dg.RunRequest] = []
    shas: list[str] = []
    for plan in plans:
        for sha in plan.to_index:
            if sha in shas:
                continue
            shas.append(sha)
            tags = {"kb/source": "sensor", "kb/branch": plan.branch, "kb/reason": plan.reason}
            request = dg.RunRequest(run_key=sha, partition_key=sha, run_config=index_config(), tags=tags)
            requests.append(request)
    new = [sha for sha in shas if not context.instance.has_dynamic_partition("commits", sha)]
    moved = [plan for plan in plans if stored.get(plan.branch) != plan.tip]
    if moved:
        with engine.begin() as conn:
            for plan in moved:
                writes.set_branch(conn, plan.branch, plan.tip)
    cursor = {**cursors, **{plan.branch: plan.tip for plan in plans}}
    return dg.SensorResult(
        run_requests=requests,
        dynamic_partitions_requests=[commits.build_add_request(new)] if new else [],
        cursor=json.dumps(cursor, sort_keys=True),
    )


@dg.run_status_sensor(
    name="verify_after_index",
    run_status=dg.DagsterRunStatus.SUCCESS,
    monitored_jobs=[index_job(), index_multiprocess_job()],
    request_job=verify_job(),
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="After each successful index run, verifies the commit against grimp and griffe.",
)
def verify_after_index(context: dg.RunStatusSensorContext) -> dg.RunRequest | dg.SkipReason:
    """Request the oracle checks for the partition an index run just published."""
    run = context.dagster_run
    partition = run.tags.get("dagster/partition")
    if not partition:
        return dg.SkipReason(f"run {run.run_id} has no commit partition")
    if run.tags.get("kb/verify") == "inline":
        return dg.SkipReason(f"{partition[:12]} was verified by the run itself")
    return dg.RunRequest(run_key=f"verify:{run.run_id}", partition_key=partition, run_config=quiet_config())
