"""Tier-1 process-paths oracle: entry points to sinks on a hand-labelled two-commit fixture.

``fixtures/paths_oracle`` is a FastAPI + SQLAlchemy app with a 2-hop cross-file chain (route →
service → repository → ``Session.add``/``commit``, the session typed by an annotation), 0-hop
direct sinks (``requests.post``, and ``stripe.Charge.create`` which only ``.kb/sinks.yaml`` makes a
sink), an event-handler entry point (``@app.on_event("startup")``), a CLI script (only its
``__main__`` block counts), a cycle (``ping`` ↔ ``pong``), a depth cap (``max_depth: 3`` hides a
4-hop chain and flags the search), a first-party function declared a sink, a built-in sink the
override removes (``os.system``) and a route that reaches nothing. The second commit changes only
``.kb/sinks.yaml``. ``expected.json`` is written by hand.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kb_assets.core.paths.sinks import sink_registry
from tests.gitfixtures import build_repo
from tests.kbfixtures import KbEnv

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.fixture
def oracle_repo(tmp_path: Path) -> tuple[Path, list[str]]:
    """The oracle fixture as a real git repository; returns (path, shas in commit order)."""
    shas = build_repo(FIXTURES / "paths_oracle", tmp_path / "app")
    return tmp_path / "app", shas


def _expected() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / "paths_oracle" / "expected.json").read_text())
    return data


def _paths(records: list[dict[str, Any]]) -> set[tuple[Any, ...]]:
    return {
        (
            r["payload"]["entrypoint"],
            r["payload"]["entry_kind"],
            r["payload"]["sink"],
            r["payload"]["sink_category"],
            tuple(r["payload"]["chain"]),
        )
        for r in records
    }


def _gaps(stdout: str) -> set[tuple[str, str, int]]:
    found = set()
    for line in stdout.splitlines():
        if line.startswith("gap ") and "(process_paths)" in line:
            where, reason = line.split()[1:3]
            path, number = where.rstrip(":").rsplit(":", 1)
            found.add((path, reason, int(number)))
    return found


def test_tier1_process_paths_oracle(kb_env: KbEnv, oracle_repo: tuple[Path, list[str]]) -> None:
    """Each commit's process paths equal the hand-labelled ones exactly (entry kind, sink, category,
    shortest chain), the depth cap is flagged as a ``depth_cap`` gap only where it cut the search,
    and the search terminates on the cycle."""
    repo, shas = oracle_repo
    expected = _expected()
    for sha, name in zip(shas, ("01-initial", "02-deeper-search"), strict=True):
        indexed = kb_env.kb("index", repo, "--sha", sha)
        assert indexed.code == 0, indexed.stderr
        records = kb_env.kb("export", repo, "--sha", sha, "--kind", "process_path").jsonl()
        want = {(e, k, s, c, tuple(chain)) for e, k, s, c, chain in expected[name]["paths"]}
        assert _paths(records) == want, name
        assert _gaps(indexed.stdout) == {tuple(g) for g in expected[name]["gaps"]}, name
        for record in records:
            assert (
                record["logical_key"]
                == f"path:{record['payload']['entrypoint']}->{record['payload']['sink']}"
            )
            assert record["payload"]["hops"] == len(record["payload"]["chain"]) - 1


def test_grounding_spans_every_step_and_the_sink_site(
    kb_env: KbEnv, oracle_repo: tuple[Path, list[str]]
) -> None:
    """A path is grounded on every span along its chain — the entry point, each step (across files)
    and the function that calls the sink — and ``sink_lines`` names the sink's call sites."""
    repo, shas = oracle_repo
    assert kb_env.kb("index", repo, "--sha", shas[0]).code == 0
    records = {
        r["logical_key"]: r
        for r in kb_env.kb("export", repo, "--sha", shas[0], "--kind", "process_path").jsonl()
    }
    chain_path = records["path:app.main.create_order->sqlalchemy.orm.Session.add"]
    roles = sorted((g["role"], g["file"]) for g in chain_path["grounding"] if ":" not in g["role"])
    assert [r for r in roles if not r[0].startswith("entry_")] == [
        ("entrypoint", "app/main.py"),
        ("sink_site", "app/repo.py"),
        ("step", "app/repo.py"),
        ("step", "app/services.py"),
    ]
    assert ("entry_handler", "app/main.py") in roles
    direct = records["path:app.main.webhook->requests.post"]
    own = sorted(
        g["role"] for g in direct["grounding"] if not g["role"].startswith(("entry_", "sink_registry:"))
    )
    assert own == ["entrypoint", "sink_site"]
    first_party = records["path:app.main.deep->app.ledger.write_entry"]
    assert ("sink", "app/ledger.py") in {(g["role"], g["file"]) for g in first_party["grounding"]}
    for key, where in _expected()["sink_lines"].items():
        record = records[f"path:{key}"]
        assert record["payload"]["sink_lines"] == where["lines"], key
        assert where["file"] in {g["file"] for g in record["grounding"] if g["role"] == "sink_site"}


def test_sinks_override_digest_is_identity_bearing(
    kb_env: KbEnv, oracle_repo: tuple[Path, list[str]]
) -> None:
    """The override's effect is in every path (``sinks_digest`` differs from the built-in registry's),
    and a commit that changes only ``.kb/sinks.yaml`` gives every process path a new identity while
    the call graph's artifacts keep theirs."""
    repo, shas = oracle_repo
    ids: dict[str, dict[str, set[str]]] = {}
    for sha in shas:
        assert kb_env.kb("index", repo, "--sha", sha).code == 0
        ids[sha] = {}
        for kind in ("process_path", "call_edge"):
            records = kb_env.kb("export", repo, "--sha", sha, "--kind", kind).jsonl()
            ids[sha][kind] = {r["artifact_id"] for r in records}
            if kind == "process_path":
                digests = {r["payload"]["sinks_digest"] for r in records}
                assert len(digests) == 1
                assert digests != {sink_registry({})[0].digest}
    first, second = shas
    assert ids[first]["call_edge"] == ids[second]["call_edge"]
    assert not ids[first]["process_path"] & ids[second]["process_path"]
