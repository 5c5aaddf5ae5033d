"""``kb ui`` serves the Dagster UI for the repository on loopback, with knowbase's asset graph."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import psutil
import pytest

from kb_assets.assets.launched import ADOPTED
from kb_assets.jobs import INDEX_JOB
from tests.gitfixtures import commit_tree, init_repo
from tests.kbfixtures import KbEnv

QUERY = "{ assetNodes { assetKey { path } assetChecksOrError { ... on AssetChecks { checks { name } } } } }"
RUNS = (
    '{ runsOrError(filter: {pipelineName: "%s"}) { ... on Runs { results { runId status tags { key } } } } }'
)
LOGS = '{ logsForRun(runId: "%s") { ... on EventConnection { events { ... on MessageEvent { message } } } } }'
SENSORS = (
    "{ repositoriesOrError { ... on RepositoryConnection "
    "{ nodes { sensors { name sensorState { status } } } } } }"
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _graphql(port: int, query: str) -> dict[str, Any]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/graphql",
        data=json.dumps({"query": query}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        data: dict[str, Any] = json.loads(response.read())
    return data


@pytest.mark.slow
def test_kb_ui_serves_the_asset_graph_on_loopback(kb_env: KbEnv, tmp_path: Path) -> None:
    """`kb ui` starts dagster dev bound to 127.0.0.1; its GraphQL lists every deterministic asset,
    the gate checks and the running branch sensor; stopping it leaves no process behind."""
    repo = init_repo(tmp_path / "r")
    commit_tree(repo, {"a.py": "import os\n"}, "first")
    port = _free_port()
    proc = _start_ui(kb_env, repo, port)
    try:
        deadline = time.monotonic() + 120
        answer: dict[str, Any] = {}
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                answer = _graphql(port, QUERY).get("data") or {}
                if answer:
                    break
            except OSError:
                pass
            time.sleep(1)
        assert answer, f"UI did not answer (exit {proc.poll()})"
        nodes = answer["assetNodes"]
        keys = {"/".join(n["assetKey"]["path"]) for n in nodes}
        assert {"commit_tree", "code_spans", "import_edges", "knowledge_snapshot"} <= keys
        assert {"oracle_agreement", "descriptions", "decisions"} <= keys  # off the index job
        checks = {c["name"] for n in nodes for c in n["assetChecksOrError"].get("checks", [])}
        assert {
            "every_artifact_grounded",
            "ids_reproducible",
            "matches_grimp",
            "extractions_reproducible",
            "zero_orphans",
            "blob_cache_reproduces",
            "invalidation_exact",
        } <= checks
        repos = _graphql(port, SENSORS)["data"]["repositoriesOrError"]["nodes"]
        sensors = {s["name"]: s["sensorState"]["status"] for r in repos for s in r["sensors"]}
        assert sensors == {"branch_sensor": "RUNNING", "verify_after_index": "RUNNING"}
        other = _non_loopback_address()
        if other is not None:
            with pytest.raises(ConnectionRefusedError):
                socket.create_connection((other, port), timeout=2).close()
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=90)
    assert _survivors(port) == [], "kb ui left Dagster processes behind"


@pytest.mark.slow
def test_kb_ui_started_with_sigint_ignored_stops_on_sigint(kb_env: KbEnv, tmp_path: Path) -> None:
    """A ``kb ui`` started as a script's background job (SIGINT ignored) still stops on SIGINT,
    and ``dagster dev`` does not inherit the ignored SIGINT: the Dagster group it stops is one
    that listens (was: both ignored it, and a caller that then killed ``kb ui`` left the UI, the
    daemon and its sensors running)."""
    repo = init_repo(tmp_path / "r")
    commit_tree(repo, {"a.py": "import os\n"}, "first")
    port = _free_port()
    proc = _start_ui(kb_env, repo, port, ignore_sigint=True)
    try:
        deadline = time.monotonic() + 120
        dev: list[psutil.Process] = []
        while time.monotonic() < deadline and proc.poll() is None and not dev:
            dev = [p for p in psutil.Process(proc.pid).children() if "dev" in p.cmdline()]
            time.sleep(0.5)
        assert dev, f"kb ui started no dagster dev (exit {proc.poll()})"
        ignored = int(Path(f"/proc/{dev[0].pid}/status").read_text().split("SigIgn:")[1].split()[0], 16)
        assert not ignored & (1 << (signal.SIGINT - 1))
        os.kill(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=90) == 0
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
    assert _survivors(port) == [], "kb ui left Dagster processes behind"


@pytest.mark.slow
def test_a_run_the_sensor_launches_takes_knowbase_s_process_settings(kb_env: KbEnv, tmp_path: Path) -> None:
    """The index run ``branch_sensor`` launches executes in a process the code server started:
    it takes knowbase's process settings there (``kb_assets.assets.launched``) and says so once in
    the run's log; the in-process run of ``kb index`` on the same instance takes nothing."""
    repo = init_repo(tmp_path / "r")
    commit_tree(repo, {"a.py": "import os\n"}, "first")
    indexed = kb_env.kb("index", repo, "--no-verify")
    assert indexed.code == 0, indexed.stderr
    commit_tree(repo, {"a.py": "import os\n", "b.py": "import a\n"}, "second")
    port = _free_port()
    proc = _start_ui(kb_env, repo, port)
    try:
        deadline = time.monotonic() + 240
        runs: list[dict[str, Any]] = []
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                runs = _graphql(port, RUNS % INDEX_JOB)["data"]["runsOrError"]["results"]
            except (OSError, KeyError, TypeError):
                runs = []
            if any(_launched(run) and run["status"] in FINISHED for run in runs):
                break
            time.sleep(1)
        done = [run for run in runs if run["status"] in FINISHED]
        assert {run["status"] for run in done} == {"SUCCESS"}, runs
        adopted = {run["runId"]: _settings_messages(port, run["runId"]) for run in done}
        expected = [ADOPTED.format(forks=", forks beside Dagster's threads")]
        assert {_launched(run) for run in done} == {True, False}  # the sensor's and kb index's
        assert all(adopted[run["runId"]] == (expected if _launched(run) else []) for run in done), adopted
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=90)
    assert _survivors(port) == [], "kb ui left Dagster processes behind"


FINISHED = ("SUCCESS", "FAILURE", "CANCELED")


def _launched(run: dict[str, Any]) -> bool:
    """Whether a run from ``RUNS`` was requested by ``branch_sensor`` (not ``kb index``'s own)."""
    return any(tag["key"] == "dagster/sensor_name" for tag in run["tags"])


def _settings_messages(port: int, run_id: str) -> list[str]:
    """The messages of a run's log that report knowbase's process settings."""
    events = _graphql(port, LOGS % run_id)["data"]["logsForRun"]["events"]
    return [e["message"] for e in events if e.get("message", "").startswith(ADOPTED.format(forks=""))]


def _start_ui(
    kb_env: KbEnv, repo: Path, port: int, *, ignore_sigint: bool = False
) -> subprocess.Popen[bytes]:
    """``kb ui`` for ``repo`` on ``port`` in a session of its own; with SIGINT ignored, as a
    script's background job starts it."""
    return subprocess.Popen(
        [sys.executable, "-m", "kb_assets.cli.main", "ui", str(repo), "--port", str(port)],
        env={**os.environ, **kb_env.environ},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if ignore_sigint else None,  # noqa: PLW1509
    )


def _survivors(port: int) -> list[int]:
    """Processes still running that were started for this UI (their command line names its port)."""
    found = []
    for p in psutil.process_iter(["pid", "cmdline", "status"]):
        cmdline = " ".join(p.info["cmdline"] or [])
        if str(port) in cmdline and "dagster" in cmdline and p.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(int(p.info["pid"]))
    return found


def _non_loopback_address() -> str | None:
    """An address of this host other than loopback (the UI must not answer there), if it has one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("10.255.255.255", 1))
            address = str(s.getsockname()[0])
        except OSError:
            return None
    return None if address.startswith("127.") else address
