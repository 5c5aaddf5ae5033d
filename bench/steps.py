"""Where the newest Dagster run of a repository spent its time, step by step (``bench/run.py``).

    python bench/steps.py REPO [--top 12]

Reads the run's step statistics from the repository's persistent Dagster instance (the one
``kb index`` and ``kb watch`` run on; ``KB_HOME``/``KB_DB_URL`` as for ``kb``) and prints the run's
wall time, the sum of its step times, the slowest steps and the rest as one line. The gap between
the run's wall time and the process's is imports and opening the instance; the gap between the
sum of steps and the run's wall time is Dagster's own work between steps. Prints figures; asserts
nothing.
"""

from __future__ import annotations

import argparse
import sys

from kb_assets.cli.instance import open_instance
from kb_resources.git.repo import GitRepo
from kb_resources.settings import load_settings
from kb_resources.store.engine import open_store


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo")
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    settings = load_settings()
    store = open_store(settings, GitRepo.open(args.repo).key(), read_only=True, migrate=False)
    instance = open_instance(settings, store)
    runs = instance.get_run_records(limit=1)
    if not runs:
        print("    no Dagster run recorded")
        return 0
    run = runs[0]
    stats = [s for s in instance.get_run_step_stats(run.dagster_run.run_id) if s.start_time and s.end_time]
    timed = sorted(((s.end_time - s.start_time, s.step_key) for s in stats), reverse=True)  # type: ignore[operator]
    total = sum(seconds for seconds, _ in timed)
    wall = (run.end_time - run.start_time) if run.start_time and run.end_time else None
    shown = "unknown" if wall is None else f"{wall:.2f} s"
    print(f"    Dagster run {shown} wall, {len(timed)} steps summing {total:.2f} s; slowest:")
    for seconds, key in timed[: args.top]:
        print(f"      {seconds:7.2f} s  {key}")
    rest = timed[args.top :]
    if rest:
        print(f"      {sum(s for s, _ in rest):7.2f} s  {len(rest)} other steps")
    return 0


if __name__ == "__main__":
    sys.exit(main())
