"""Tier-1 events oracle: knowbase's event handlers on a hand-labelled fixture repository.

The fixture (``fixtures/events_oracle``) is a ``src/`` shop plus a loose ``tests/`` directory and
exercises pydantic v2 ``@field_validator`` (several fields, ``mode="before"``) and
``@model_validator``, v1 ``@validator(pre=True)``, ``@root_validator(pre=True)``, a bare
``@root_validator`` and a validator applied by call; FastAPI ``FastAPI(lifespan=...,
on_startup=[...])``, ``@app.on_event``, ``app.add_event_handler``, ``@router.on_event`` and an app
factory's local app; SQLAlchemy ``@event.listens_for`` on an engine variable, on ``Engine``, on a
class attribute and on a name rebound later in the module, and the call forms ``event.listen``,
``from sqlalchemy.event import listen`` and ``sa.event.listen`` — with handler, target class and
registration in three different files — plus a model defined inside a test function. Every known
gap is there once: a lambda listener, dynamic event names (SQLAlchemy, pydantic, FastAPI), an
unresolvable target, an unresolvable handler, ``listen`` inside a function body, ``on_event`` on
something that is not an app and a validator outside a class. Look-alikes (attrs'
``@x.validator``, another library's ``on_event("message")``, ``sock.listen(5)``) yield nothing.
``expected.json`` lists every handler, its registrations, its grounding and every gap by hand.
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
    shas = build_repo(FIXTURES / "events_oracle", tmp_path / "shop")
    return tmp_path / "shop", shas[-1]


def _expected() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / "events_oracle" / "expected.json").read_text())
    return data


def _registrations(record: dict[str, Any]) -> list[list[str]]:
    return [[r["framework"], r["event"], r["target"], r["site"]] for r in record["payload"]["registrations"]]


def test_tier1_events_oracle_handlers(kb_env: KbEnv, oracle_repo: tuple[Path, str]) -> None:
    """Every hand-labelled handler is found with exactly its registrations (framework, event,
    target, site; sorted), the three-file ``event.listen`` case included, and nothing else is —
    no look-alike becomes a handler; ``kb index`` exits 0, so every blocking check passed."""
    repo, _ = oracle_repo
    indexed = kb_env.kb("index", repo)
    assert indexed.code == 0, indexed.stderr
    records = kb_env.kb("export", repo, "--kind", "event_handler").jsonl()
    actual = {r["logical_key"]: _registrations(r) for r in records}
    expected = {key: entry["registrations"] for key, entry in _expected()["handlers"].items()}
    assert actual == expected
    for record in records:
        assert record["logical_key"] == f"event:{record['payload']['handler']}"
        assert set(record["payload"]) == {"handler", "registrations"}  # location-free


def test_tier1_events_oracle_grounding(kb_env: KbEnv, oracle_repo: tuple[Path, str]) -> None:
    """Each handler is grounded on its definition, each first-party target's definition (cross-file
    for the model class), the import statements followed to them and the registration site, at
    the hand-labelled lines; a decorator's ``registration`` entry starts at the decorator itself
    (checked against ``git show``, not against knowbase's own data)."""
    repo, sha = oracle_repo
    assert kb_env.kb("index", repo).code == 0
    expected = _expected()["handlers"]
    for record in kb_env.kb("export", repo, "--kind", "event_handler").jsonl():
        actual = sorted([g["file"], g["role"], g["start_line"]] for g in record["grounding"])
        assert actual == sorted(expected[record["logical_key"]]["grounding"]), record["logical_key"]
        if {r["site"].split(":")[0] for r in record["payload"]["registrations"]} != {"decorator"}:
            continue
        for g in record["grounding"]:
            if g["role"] == "registration":
                text = _show(repo, sha, g["file"])
                assert text[g["start_line"] - 1].lstrip().startswith("@"), record["logical_key"]


def _show(repo: Path, sha: str, path: str) -> list[str]:
    """The lines of ``path`` at ``sha``, from git itself."""
    out = subprocess.run(
        ["git", "-C", str(repo), "show", f"{sha}:{path}"], capture_output=True, text=True, check=True
    )
    return out.stdout.splitlines()


def test_tier1_events_oracle_gaps(kb_env: KbEnv, oracle_repo: tuple[Path, str]) -> None:
    """The known gaps — lambda listener, dynamic event names, unresolvable target and handler,
    ``listen`` inside a function body, ``on_event`` on a non-app, a validator outside a class —
    are recorded with their lines (printed by ``kb index``), never silently skipped."""
    repo, _ = oracle_repo
    indexed = kb_env.kb("index", repo)
    assert indexed.code == 0, indexed.stderr
    gaps = set()
    for line in indexed.stdout.splitlines()[1:]:
        m = GAP_LINE.match(line)
        assert m, f"not a gap line: {line!r}"
        if m["source"] == "event_handlers":
            gaps.add((m["path"], m["reason"], int(m["line"]) if m["line"] else None))
    assert gaps == {(p, r, n) for p, r, n in _expected()["gaps"]}
