"""Tier-1 import oracle: knowbase's import edges on a hand-labelled fixture repository.

The fixture (``fixtures/imports_oracle``) uses a ``src/`` layout with two top-level packages and a
loose script, and exercises absolute, relative (``.``, ``..``, ``from . import x``), aliased,
star, ``TYPE_CHECKING``, function-local and re-exported imports, an unresolvable first-party
name, a dynamic import and a file that does not parse. ``expected.json`` lists every edge and
gap by hand.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.gitfixtures import build_repo
from tests.kbfixtures import KbEnv

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
GAP_LINE = re.compile(r"^gap (?P<path>[^:]+?)(?::(?P<line>\d+))?: (?P<reason>\w+) \((?P<source>[\w.]+)\)")


@pytest.fixture
def oracle_repo(tmp_path: Path) -> tuple[Path, str]:
    """The oracle fixture as a real git repository; returns (path, head sha)."""
    shas = build_repo(FIXTURES / "imports_oracle", tmp_path / "shop")
    return tmp_path / "shop", shas[-1]


def _expected() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / "imports_oracle" / "expected.json").read_text())
    return data


def test_tier1_import_oracle_edges(kb_env: KbEnv, oracle_repo: tuple[Path, str]) -> None:
    """Every hand-labelled import edge is found with its span mapping, lines and externality, and
    nothing else is: the extractor's edge set equals the oracle exactly."""
    repo, _ = oracle_repo
    indexed = kb_env.kb("index", repo)
    assert indexed.code == 0, indexed.stderr
    records = kb_env.kb("export", repo, "--kind", "import_edge").jsonl()
    actual = {
        (r["payload"]["importer"], r["payload"]["imported"]): (
            r["payload"]["span_mapping"],
            r["payload"]["lines"],
            r["payload"]["external"],
        )
        for r in records
    }
    expected = {(a, b): (mapping, lines, external) for a, b, mapping, lines, external in _expected()["edges"]}
    assert actual == expected
    tc_only = {
        (r["payload"]["importer"], r["payload"]["imported"])
        for r in records
        if r["payload"]["type_checking_only"]
    }
    assert tc_only == {tuple(e) for e in _expected()["type_checking_only"]}


def test_tier1_import_oracle_gaps(kb_env: KbEnv, oracle_repo: tuple[Path, str]) -> None:
    """The dynamic import, the unresolvable first-party name and the unparseable file are recorded
    gaps (printed by ``kb index``), never silently skipped and never turned into edges."""
    repo, _ = oracle_repo
    indexed = kb_env.kb("index", repo)
    assert indexed.code == 0, indexed.stderr
    gaps = set()
    for line in indexed.stdout.splitlines()[1:]:
        m = GAP_LINE.match(line)
        assert m, f"not a gap line: {line!r}"
        gaps.add((m["path"], m["reason"], int(m["line"]) if m["line"] else None))
    assert gaps == {(p, r, n) for p, r, n in _expected()["gaps"]}


def test_grounding_points_at_the_import_statements(kb_env: KbEnv, oracle_repo: tuple[Path, str]) -> None:
    """Every exported grounding entry names real lines of that commit, and those lines are the
    import statement itself (checked against ``git show``, not against knowbase's own data)."""
    repo, sha = oracle_repo
    assert kb_env.kb("index", repo).code == 0
    for record in kb_env.kb("export", repo, "--kind", "import_edge").jsonl():
        assert record["grounding"], record["logical_key"]
        for g in record["grounding"]:
            text = subprocess.run(
                ["git", "-C", str(repo), "show", f"{sha}:{g['file']}"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.splitlines()
            assert 1 <= g["start_line"] <= g["end_line"] <= len(text)
            statement = "\n".join(text[g["start_line"] - 1 : g["end_line"]]).strip()
            assert statement.startswith(("import ", "from ")), (record["logical_key"], statement)
