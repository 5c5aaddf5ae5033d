"""Import edges of real libraries equal grimp's own graph of them.

The corpora are pure-Python packages already installed in the environment (so the test runs
offline), copied as they are into a fresh git repository and indexed through the real CLI.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from kb_gates import gates
from kb_resources.git.repo import GitRepo
from kb_resources.settings import load_settings
from kb_resources.store.engine import open_store
from tests.gitfixtures import commit_tree, init_repo
from tests.kbfixtures import KbEnv


def _package_files(name: str) -> dict[str, bytes]:
    spec = importlib.util.find_spec(name)
    assert spec is not None
    assert spec.submodule_search_locations
    root = Path(next(iter(spec.submodule_search_locations)))
    return {
        f"src/{name}/{p.relative_to(root).as_posix()}": p.read_bytes()
        for p in sorted(root.rglob("*.py"))
        if "__pycache__" not in p.parts
    }


@pytest.mark.parametrize("library", ["alembic", "jinja2"])
def test_real_library_import_graph_equals_grimp(kb_env: KbEnv, tmp_path: Path, library: str) -> None:
    """Indexing a real library yields internal import edges identical to grimp's graph of the
    same commit (the ``matches_grimp`` check passes, so ``kb index`` exits 0), and every record is
    grounded on real lines."""
    repo = init_repo(tmp_path / library)
    sha = commit_tree(repo, _package_files(library), f"{library} as installed")
    res = kb_env.kb("index", repo)
    assert res.code == 0, res.stderr
    with open_store(load_settings(kb_env.environ), GitRepo.open(repo).key()) as store:
        diff = gates.grimp_diff(GitRepo.open(repo), store.engine, sha)
    assert diff.equal, diff.evidence()
    assert diff.matched > 50
    records = kb_env.kb("export", repo, "--kind", "import_edge").jsonl()
    assert all(r["grounding"] and r["payload"]["lines"] for r in records)
