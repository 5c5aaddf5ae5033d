"""A process that runs the index job commit after commit (``kb watch``) opens Dagster's instance
and the Definitions once per session, not once per run, and each run still publishes."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from tests.gitfixtures import commit_tree, init_repo
from tests.kbfixtures import KbEnv
from tests.spawned import run_spawned


def _two_runs(environ: dict[str, str], repo: str, shas: list[str]) -> dict[str, object]:
    """In a spawned process: index each commit through one session, then open a second session;
    whether each commit was published and which instances the runs went through."""
    os.environ.update(environ)
    from kb_assets.cli.runner import index_commit, instance_and_definitions
    from kb_assets.cli.session import open_session

    session = open_session(argparse.Namespace(repo=repo, db_url=None))
    published: list[bool] = []
    instances: list[object] = []  # held, so that no two of them can share an id()
    for sha in shas:
        outcome = index_commit(session, sha, source="watch", verify=False)
        published.append(outcome.published)
        instances.append(instance_and_definitions(session)[0])
    other = open_session(argparse.Namespace(repo=repo, db_url=None))
    fresh = instance_and_definitions(other)[0]
    return {
        "published": published,
        "one_instance": all(instance is instances[0] for instance in instances),
        "fresh_for_another_session": all(fresh is not instance for instance in instances),
    }


def test_a_session_opens_the_instance_once_for_all_its_runs(kb_env: KbEnv, tmp_path: Path) -> None:
    """Three commits indexed one after the other through one session are all published through
    the same instance; another session opens its own."""
    repo = init_repo(tmp_path / "r")
    shas = [
        commit_tree(
            repo,
            {"pkg/__init__.py": "", f"pkg/m{n}.py": f"import os\n\n\ndef f{n}():\n    return os.sep\n"},
            f"c{n}",
        )
        for n in range(3)
    ]
    found = run_spawned(_two_runs, kb_env.environ, str(repo), shas)
    assert found == {"published": [True, True, True], "one_instance": True, "fresh_for_another_session": True}
