"""Tier-1 API oracle: knowbase's static FastAPI contract against a hand-labelled fixture and against
FastAPI itself.

The fixture (``fixtures/api_oracle``) is a shop service: an app with ``include_router`` prefixes
(one read from a constant in another module, one an f-string), routers with prefixes and tags in
their own modules, a nested include (reviews inside items), a FastAPI sub-app built by a factory
and mounted, a mounted ``StaticFiles`` (a gap, not a route), response models in another module
(explicit, ``list[...]``, inferred from the return annotation, explicitly ``None``), status codes
as literals and ``status.HTTP_*`` constants, ``api_route`` with two methods, ``add_api_route``, a
websocket route, a shadowed duplicate, a router no app includes and a dynamic include.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.gitfixtures import build_repo, commit_tree, init_repo
from tests.kbfixtures import KbEnv

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
GAP_LINE = re.compile(r"^gap (?P<path>[^:]+?)(?::(?P<line>\d+))?: (?P<reason>\w+) \((?P<source>[\w.]+)\)")


@pytest.fixture
def oracle_repo(tmp_path: Path) -> tuple[Path, str]:
    """The oracle fixture as a real git repository; returns (path, head sha)."""
    shas = build_repo(FIXTURES / "api_oracle", tmp_path / "shop")
    return tmp_path / "shop", shas[-1]


def _expected() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / "api_oracle" / "expected.json").read_text())
    return data


def _route(record: dict[str, Any]) -> list[Any]:
    p = record["payload"]
    fields = ("method", "path", "handler", "response_model", "response_model_shape", "status_code", "tags")
    return [p.get(name) for name in fields] + [p["app"], p.get("mounted_at")]


def test_tier1_api_oracle_routes(kb_env: KbEnv, oracle_repo: tuple[Path, str]) -> None:
    """Every hand-labelled (method, path) is found with its handler, response model, status code,
    tags, app and mount point, and nothing else is; keys are ``api:METHOD PATH``."""
    repo, _ = oracle_repo
    indexed = kb_env.kb("index", repo)
    assert indexed.code == 0, indexed.stderr
    records = kb_env.kb("export", repo, "--kind", "api_route").jsonl()
    assert sorted(_route(r) for r in records) == sorted(_expected()["routes"])
    assert all(r["logical_key"] == f"api:{r['payload']['method']} {r['payload']['path']}" for r in records)


def test_tier1_api_oracle_grounding(kb_env: KbEnv, oracle_repo: tuple[Path, str]) -> None:
    """Each route is grounded on its handler, its response model class, every app and router on the
    way, the include/mount/add_api_route statements and the prefix constant, at the hand-labelled
    lines; payloads carry no line numbers."""
    repo, _ = oracle_repo
    assert kb_env.kb("index", repo).code == 0
    expected = _expected()["grounding"]
    records = kb_env.kb("export", repo, "--kind", "api_route").jsonl()
    assert {r["logical_key"] for r in records} == set(expected)
    for record in records:
        actual = sorted([g["file"], g["role"], g["start_line"]] for g in record["grounding"])
        assert actual == sorted(expected[record["logical_key"]]), record["logical_key"]
        assert not {"line", "lines", "start_line"} & set(record["payload"])


def test_tier1_api_oracle_gaps(kb_env: KbEnv, oracle_repo: tuple[Path, str]) -> None:
    """The mounted StaticFiles, the dynamic include, the shadowed duplicate and the router no app
    includes are recorded gaps, printed by ``kb index``."""
    repo, _ = oracle_repo
    indexed = kb_env.kb("index", repo)
    assert indexed.code == 0, indexed.stderr
    gaps = set()
    for line in indexed.stdout.splitlines()[1:]:
        m = GAP_LINE.match(line)
        assert m, f"not a gap line: {line!r}"
        if m["source"] == "api_routes":
            gaps.add((m["path"], m["reason"], int(m["line"]) if m["line"] else None))
    assert gaps == {(p, r, n) for p, r, n in _expected()["gaps"]}


@pytest.mark.slow
def test_introspect_compare_agrees_with_fastapi(kb_env: KbEnv, oracle_repo: tuple[Path, str]) -> None:
    """``kb introspect shop.main:app --compare`` really runs FastAPI in the sandbox on the same
    commit and finds the static contract equal to the framework's own route table: every
    (method, path), handler, response model, status code and tag list agrees."""
    repo, sha = oracle_repo
    assert kb_env.kb("index", repo).code == 0
    result = kb_env.kb_process("introspect", "shop.main:app", "--repo", repo, "--compare")
    assert result.code == 0, result.stdout + result.stderr
    summary = json.loads(result.stdout.splitlines()[-1])
    assert summary["sha"] == sha
    assert summary["static_app"] == "shop.main.app"
    assert summary["openapi_error"] is None
    agreement = summary["agreement"]
    assert agreement["names"] == {"agree": 14, "total": 14, "ratio": 1.0}
    for aspect in ("handlers", "response_models", "status_codes", "tags"):
        assert agreement[aspect]["ratio"] == 1.0, aspect


@pytest.mark.slow
def test_introspect_lists_openapi_details(kb_env: KbEnv, oracle_repo: tuple[Path, str]) -> None:
    """Without ``--compare`` the route list carries FastAPI's operationId, response schema and
    status codes (the mounted sub-app's routes under its mount path)."""
    repo, _ = oracle_repo
    result = kb_env.kb_process("introspect", "shop.main:app", "--repo", repo)
    assert result.code == 0, result.stderr
    routes: dict[tuple[str, str], dict[str, Any]] = {}
    for line in result.stdout.splitlines():
        r = json.loads(line)
        routes[(r["method"], r["path"])] = r
    created = routes[("POST", "/api/v1/users/")]
    assert created["status_codes"] == ["201", "422"]
    assert created["response_schema"] == "#/components/schemas/User"
    assert created["operation_id"] == "create_user_api_v1_users__post"
    assert routes[("POST", "/admin/users/{user_id}/ban")]["mounted_at"] == "/admin"


def test_introspect_compare_fails_on_a_difference(
    kb_env: KbEnv, oracle_repo: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With one static route withheld, ``--compare`` reports it as ``runtime_only`` and exits 1."""
    from kb_assets.core.extractors.api_routes import ApiRoutesExtractor
    from kb_assets.core.extractors.base import Extraction
    from kb_assets.core.program import Program

    original = ApiRoutesExtractor.resolve

    def withhold_ping(self: ApiRoutesExtractor, program: Program) -> Extraction:
        extraction = original(self, program)
        kept = tuple(d for d in extraction.drafts if d.logical_key != "api:HEAD /ping")
        return Extraction(drafts=kept, gaps=extraction.gaps)

    repo, _ = oracle_repo
    monkeypatch.setattr(ApiRoutesExtractor, "resolve", withhold_ping)
    assert kb_env.kb("index", repo).code == 0
    result = kb_env.kb("introspect", "shop.main:app", "--repo", repo, "--compare")
    assert result.code == 1
    diffs = [json.loads(line) for line in result.stdout.splitlines()[:-1]]
    assert diffs == [{"diff": "runtime_only", "method": "HEAD", "path": "/ping"}]


def test_introspect_bad_target_exits_2(kb_env: KbEnv, oracle_repo: tuple[Path, str]) -> None:
    """No such module, no such attribute, or a malformed target: exit 2 with one line saying what."""
    repo, _ = oracle_repo
    missing = kb_env.kb("introspect", "shop.nowhere:app", "--repo", repo)
    assert missing.code == 2
    assert "no module 'shop.nowhere'" in missing.stderr
    no_app = kb_env.kb("introspect", "shop.main:nope", "--repo", repo)
    assert no_app.code == 2
    assert "no FastAPI app named 'nope'" in no_app.stderr
    malformed = kb_env.kb("introspect", "shop.main", "--repo", repo)
    assert malformed.code == 2
    assert "MODULE:APP" in malformed.stderr


_HOSTILE = {
    "netapp/__init__.py": "",
    "netapp/connect.py": (
        "import socket\n"
        "socket.create_connection(('127.0.0.1', 9), timeout=1)\n"
        "from fastapi import FastAPI\napp = FastAPI()\n"
    ),
    "netapp/resolve.py": "import socket\nsocket.getaddrinfo('example.org', 443)\n",
    "netapp/writer.py": ("OUTSIDE = {outside!r}\nopen(OUTSIDE, 'w').write('escaped')\n"),
    "netapp/local.py": (
        "from fastapi import FastAPI\n"
        "open('scratch.txt', 'w').write('inside the sandbox')\n"
        "app = FastAPI()\n\n\n"
        "@app.get('/ok')\ndef ok() -> int:\n    return 1\n"
    ),
}


@pytest.fixture
def hostile_repo(tmp_path: Path) -> tuple[Path, Path]:
    """A repository whose modules try to reach the network or write outside the sandbox."""
    repo = init_repo(tmp_path / "hostile")
    outside = tmp_path / "outside" / "escaped.txt"
    outside.parent.mkdir()
    files = {path: text.format(outside=str(outside)) for path, text in _HOSTILE.items()}
    commit_tree(repo, files, "hostile modules")
    return repo, outside


def _introspect(repo: Path, target: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kb_assets.cli.main", "introspect", target, "--repo", str(repo)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def test_sandbox_blocks_network(hostile_repo: tuple[Path, Path]) -> None:
    """An app module that connects (or resolves a name) at import time fails cleanly: exit 2, one
    line naming the blocked network access, no traceback."""
    repo, _ = hostile_repo
    for target in ("netapp.connect:app", "netapp.resolve:app"):
        result = _introspect(repo, target)
        assert result.returncode == 2, result.stderr
        assert "network access is blocked" in result.stderr
        assert "Traceback" not in result.stderr


def test_sandbox_writes_nothing_outside_its_temp_dir(hostile_repo: tuple[Path, Path]) -> None:
    """A module writing outside the sandbox is stopped before the file exists; writing into its
    working directory is allowed, lands in the temporary export, and leaves the repository's work
    tree untouched."""
    repo, outside = hostile_repo
    blocked = _introspect(repo, "netapp.writer:app")
    assert blocked.returncode == 2
    assert "is blocked" in blocked.stderr
    assert not outside.exists()
    allowed = _introspect(repo, "netapp.local:app")
    assert allowed.returncode == 0, allowed.stderr
    assert [json.loads(line)["path"] for line in allowed.stdout.splitlines()] == ["/ok"]
    assert not (repo / "scratch.txt").exists()
    status = subprocess.run(
        ["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, text=True, check=True
    )
    assert status.stdout == ""
