"""``kb diff BASE HEAD``: units added, removed and changed per kind, with provenance."""

from __future__ import annotations

import json
from pathlib import Path

from tests.gitfixtures import build_repo
from tests.kbfixtures import KbEnv

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def test_kb_diff_reports_added_and_changed_units_with_provenance(kb_env: KbEnv, tmp_path: Path) -> None:
    """Between the first and last commit of the history fixture: the new import is added, compute's
    public symbol changed (its definition changed), reformatting and moved lines change nothing;
    --json is a stable object and the human output names each unit with file:lines@sha."""
    repo = tmp_path / "history"
    shas = build_repo(FIXTURES / "history", repo)
    for sha in (shas[0], shas[-1]):
        assert kb_env.kb("index", repo, "--sha", sha).code == 0
    res = kb_env.kb("diff", repo, shas[0], shas[-1], "--json")
    assert res.code == 0, res.stderr
    diff = json.loads(res.stdout)
    assert (diff["base"], diff["head"]) == (shas[0], shas[-1])
    added = {u["logical_key"] for u in diff["kinds"]["import_edge"]["added"]}
    assert added == {"import:pkg.extra->sys"}
    changed = {c["after"]["logical_key"] for c in diff["kinds"]["public_symbol"]["changed"]}
    assert changed == {"public:pkg.compute"}
    assert "import_edge" not in diff["kinds"] or not diff["kinds"]["import_edge"]["changed"]
    assert diff["totals"]["removed"] == 0
    assert kb_env.kb("diff", repo, shas[0], shas[-1], "--json").stdout == res.stdout
    human = kb_env.kb("diff", repo, shas[0], shas[-1])
    assert f"+ import:pkg.extra->sys  (pkg/extra.py:6-6@{shas[-1]}" in human.stdout


def test_kb_diff_of_an_unindexed_commit_exits_2(kb_env: KbEnv, tmp_path: Path) -> None:
    """A revision that is not indexed is bad input (exit 2, one line saying how to index it)."""
    repo = tmp_path / "history"
    shas = build_repo(FIXTURES / "history", repo)
    assert kb_env.kb("index", repo, "--sha", shas[0]).code == 0
    res = kb_env.kb("diff", repo, shas[0], shas[1])
    assert res.code == 2
    assert "kb index" in res.stderr
