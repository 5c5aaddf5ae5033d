"""The ``kb`` console script as a batch process: it exits without the interpreter's teardown, so
everything that must happen at exit is checked here on a real process (the embedded server is
stopped, the output is complete, the exit code is the command's)."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

from kb_assets.core.collector import COLLECTOR_THRESHOLDS
from tests.gitfixtures import commit_tree, init_repo
from tests.kbfixtures import CliResult, KbEnv
from tests.storefixtures import live_postmasters

SHOW_THRESHOLDS = """
import gc, sys
from kb_assets.cli import main as cli
cli.main = lambda argv=None: print(gc.get_threshold()) or 7
cli.entry()
"""


def _kb(home: Path, *args: str | Path) -> CliResult:
    """A real ``kb`` process on the embedded store under ``home`` (an empty KB_DB_URL: no server URL)."""
    return KbEnv(home=home, db_url="").kb_process(*args)


def test_a_kb_process_on_the_embedded_store_exits_cleanly(tmp_path: Path) -> None:
    """Index and show through real processes: full output, exit codes kept, no server left."""
    repo = init_repo(tmp_path / "r")
    files = {f"pkg/m{i}.py": f"import os\n\n\ndef f{i}():\n    return os.sep\n" for i in range(30)}
    commit_tree(repo, {**files, "pkg/__init__.py": ""}, "first")
    home = tmp_path / "home"
    indexed = _kb(home, "index", repo, "--no-verify")
    assert indexed.code == 0, indexed.stderr
    assert indexed.stdout.startswith("indexed ")
    assert "kb: oracle checks deferred" in indexed.stderr  # the last line written before exit
    assert live_postmasters(home / "pg") == []
    exported = _kb(home, "export", repo)
    assert exported.code == 0, exported.stderr
    lines = exported.stdout.splitlines()
    assert len(lines) >= 30  # every record, the last one whole: stdout was flushed before exiting
    assert all(line.startswith("{") and line.endswith("}") for line in lines)
    assert live_postmasters(home / "pg") == []
    missing = _kb(home, "show", tmp_path / "not-a-repo")
    assert missing.code == 2
    assert missing.stderr.startswith("kb: ")


def test_the_console_script_tunes_the_collector_and_keeps_the_exit_code() -> None:
    """``entry`` raises the collector's thresholds before the command runs and exits with the
    command's code; ``main`` called in-process (tests, embedding) leaves the thresholds alone."""
    proc = subprocess.run(
        [sys.executable, "-c", SHOW_THRESHOLDS], capture_output=True, text=True, check=False, timeout=60
    )
    assert proc.returncode == 7
    assert proc.stdout.strip() == str(COLLECTOR_THRESHOLDS)
    assert gc.get_threshold() != COLLECTOR_THRESHOLDS


MCP_MAIN_THRESHOLDS = """
import atexit, gc, runpy, sys
atexit.register(lambda: print("thresholds", gc.get_threshold()))
sys.argv = ["kb_mcp", "--help"]
runpy.run_module("kb_mcp", run_name="__main__")
"""


def test_the_mcp_server_program_tunes_the_collector_too() -> None:
    """``python -m kb_mcp`` builds a large snapshot index for its first question: it collects as
    rarely as ``kb`` does."""
    proc = subprocess.run(
        [sys.executable, "-c", MCP_MAIN_THRESHOLDS], capture_output=True, text=True, check=False, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert f"thresholds {COLLECTOR_THRESHOLDS}" in proc.stdout
