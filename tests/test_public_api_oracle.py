"""Tier-1 library-surface oracle: knowbase's public symbols on a hand-labelled fixture repository.

The fixture (``fixtures/public_api_oracle``) uses a ``src/`` layout with two top-level packages and
exercises ``__all__`` as a literal, ``+=`` another module's ``__all__``, ``.extend`` and
``.append``, concatenations in both orders, a package without ``__all__`` (public names: defined,
star-imported, own submodules; plain imports excluded), chains through a private subpackage
(``store/_impl/_core.py``), star imports, an alias (``Cart as ShoppingCart``), a re-export from the
other top-level package, modules re-exported as names, a dynamic ``__all__`` and a third-party
re-export. ``expected.json`` lists every symbol, its grounding and every gap by hand.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from kb_assets.core.extractors.base import Extraction
from kb_assets.core.extractors.public_api import PublicApiExtractor
from kb_assets.core.program import Program
from kb_gates import gates
from kb_resources.git.repo import GitRepo
from kb_resources.settings import load_settings
from kb_resources.store.engine import open_store
from tests.gitfixtures import build_repo
from tests.kbfixtures import KbEnv
from tests.programs import program_from_files

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
GAP_LINE = re.compile(r"^gap (?P<path>[^:]+?)(?::(?P<line>\d+))?: (?P<reason>\w+) \((?P<source>[\w.]+)\)")


@pytest.fixture
def oracle_repo(tmp_path: Path) -> tuple[Path, str]:
    """The oracle fixture as a real git repository; returns (path, head sha)."""
    shas = build_repo(FIXTURES / "public_api_oracle", tmp_path / "store")
    return tmp_path / "store", shas[-1]


def _expected() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / "public_api_oracle" / "expected.json").read_text())
    return data


def _symbol(record: dict[str, Any]) -> list[Any]:
    p = record["payload"]
    return [p["package"], p["name"], p["symbol_kind"], p["target"], p.get("gap")]


def test_tier1_public_api_oracle_symbols(kb_env: KbEnv, oracle_repo: tuple[Path, str]) -> None:
    """Every hand-labelled exposed name is found with its kind, target and gap flag, and nothing
    else is; ``kb index`` exits 0, so every check passed, ``matches_griffe`` included."""
    repo, _ = oracle_repo
    indexed = kb_env.kb("index", repo)
    assert indexed.code == 0, indexed.stderr
    records = kb_env.kb("export", repo, "--kind", "public_symbol").jsonl()
    assert sorted(_symbol(r) for r in records) == sorted(_expected()["symbols"])
    assert all(
        r["logical_key"] == f"public:{r['payload']['package']}.{r['payload']['name']}" for r in records
    )


def test_tier1_public_api_oracle_grounding(kb_env: KbEnv, oracle_repo: tuple[Path, str]) -> None:
    """Each symbol is grounded on its ``__init__`` binding, every re-export hop and its definition,
    at the hand-labelled lines; payloads carry no line numbers."""
    repo, _ = oracle_repo
    assert kb_env.kb("index", repo).code == 0
    expected = _expected()["grounding"]
    for record in kb_env.kb("export", repo, "--kind", "public_symbol").jsonl():
        actual = sorted([g["file"], g["role"], g["start_line"]] for g in record["grounding"])
        assert actual == sorted(expected[record["logical_key"]]), record["logical_key"]
        assert set(record["payload"]) <= {"package", "name", "symbol_kind", "target", "gap"}


def test_tier1_public_api_oracle_gaps(kb_env: KbEnv, oracle_repo: tuple[Path, str]) -> None:
    """The dynamic ``__all__`` and the third-party re-export are recorded gaps (printed by
    ``kb index``), grounded-but-flagged rather than skipped."""
    repo, _ = oracle_repo
    indexed = kb_env.kb("index", repo)
    assert indexed.code == 0, indexed.stderr
    gaps = set()
    for line in indexed.stdout.splitlines()[1:]:
        m = GAP_LINE.match(line)
        assert m, f"not a gap line: {line!r}"
        gaps.add((m["path"], m["reason"], int(m["line"]) if m["line"] else None))
    assert gaps == {(p, r, n) for p, r, n in _expected()["gaps"]}


def test_griffe_gate_agrees_on_the_fixture(kb_env: KbEnv, oracle_repo: tuple[Path, str]) -> None:
    """The gate behind ``matches_griffe`` compares every (package, name, target) of the fixture
    with griffe's static view and finds them equal, with no package left unloaded."""
    repo, sha = oracle_repo
    assert kb_env.kb("index", repo).code == 0
    git = GitRepo.open(repo)
    with open_store(load_settings(kb_env.environ), git.key()) as store:
        diff = gates.public_api_diff(git, store.engine, sha)
    assert diff.equal, diff.evidence()
    assert diff.matched == len(_expected()["symbols"])


def test_matches_griffe_fails_when_knowbase_disagrees(
    kb_env: KbEnv, oracle_repo: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check really runs on every index: with one public symbol withheld from knowbase's
    output, ``kb index`` exits 1 and names ``matches_griffe`` and the missing entry."""
    repo, _ = oracle_repo
    original = PublicApiExtractor.resolve

    def withhold_money(self: PublicApiExtractor, program: Program) -> Extraction:
        extraction = original(self, program)
        kept = tuple(d for d in extraction.drafts if d.logical_key != "public:store.money")
        return Extraction(drafts=kept, gaps=extraction.gaps)

    monkeypatch.setattr(PublicApiExtractor, "resolve", withhold_money)
    indexed = kb_env.kb("index", repo)
    assert indexed.code == 1
    assert "matches_griffe" in indexed.stderr
    assert "('store', 'money', 'store.money')" in indexed.stderr


def test_unresolvable_exports_are_flagged_and_still_grounded() -> None:
    """A name listed in ``__all__`` that nothing binds has ``target`` null with ``gap:
    "unresolved"``, an ``unresolved_export`` gap, and is grounded on the ``__all__`` statement;
    a name served by a submodule nobody imports resolves to that module."""
    program = program_from_files(
        {"pkg/__init__.py": "VERSION = 1\n__all__ = ['VERSION', 'ghost', 'lazy']\n", "pkg/lazy.py": ""}
    )
    extraction = PublicApiExtractor().resolve(program)
    payloads = {d.payload["name"]: d.payload for d in extraction.drafts}
    assert payloads["ghost"] == {
        "package": "pkg",
        "name": "ghost",
        "symbol_kind": None,
        "target": None,
        "gap": "unresolved",
    }
    assert payloads["lazy"]["target"] == "pkg.lazy"
    assert [(g.reason, g.line) for g in extraction.gaps] == [("unresolved_export", 2)]
    ghost = next(d for d in extraction.drafts if d.payload["name"] == "ghost")
    spans = program.files["pkg/__init__.py"].spans
    assert [(_fq_path(spans, g.span_id), g.role) for g in ghost.grounding] == [("__all__", "binding")]


def _fq_path(spans: Any, span_id: str) -> str:
    """The fq_symbol_path of the span with ``span_id``."""
    return str(next(s.fq_symbol_path for s in spans if s.span_id == span_id))
