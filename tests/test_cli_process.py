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


SCRIPT_END = """
cli.main = lambda argv=None: RUN()
if sys.argv[1] == "entry":
    cli.entry()
else:
    sys.exit(RUN())
"""


def _printed(script: str, how: str) -> str:
    """What ``script`` (defining ``RUN``) prints when ``RUN`` runs as the ``kb`` console script's
    command (``how`` = "entry") or as a plain function ("plain")."""
    proc = subprocess.run(
        [sys.executable, "-c", script + SCRIPT_END, how],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


COUNT_ARENAS = """
import ctypes, os, sys, tempfile, threading
from kb_assets.cli import main as cli

def arenas():
    barrier = threading.Barrier(4)
    def work():
        barrier.wait()
        kept = [bytes(300) for _ in range(2000)]  # allocated while all four threads live
        barrier.wait()
    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    libc = ctypes.CDLL(None)
    libc.fopen.restype = ctypes.c_void_p
    libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    path = tempfile.mktemp()
    stream = libc.fopen(path.encode(), b"w")
    libc.malloc_info(0, stream)
    libc.fclose(stream)
    text = open(path).read()
    os.unlink(path)
    print(text.count("<heap nr="))
    return 0

RUN = arenas
"""


def test_the_console_script_keeps_one_malloc_arena() -> None:
    """Threads that allocate at once get arenas of their own (glibc's ``malloc_info`` lists one
    heap per arena), except under ``entry``, which limits the process to one: memory a check's
    thread freed is reused by the rest of the run (``process.one_malloc_arena``)."""

    assert int(_printed(COUNT_ARENAS, "plain")) > 1
    assert int(_printed(COUNT_ARENAS, "entry")) == 1


VALIDATE_A_FRAME = """
import sys
import polars as pl
from kb_assets.cli import main as cli
from kb_gates.frames import SPAN_FRAME, validation_errors

def validate():
    frame = pl.DataFrame({"span_id": ["a" * 64], "path": ["m.py"], "start_line": [1], "end_line": [2]})
    assert validation_errors(SPAN_FRAME, frame) == []
    print(sys.modules.get("hypothesis") is not None)
    return 0

RUN = validate
"""


def test_the_console_script_validates_frames_without_importing_hypothesis() -> None:
    """pandera imports hypothesis (installed here for the test suite) on its first validation;
    under ``entry`` that import fails as in a plain install and the validation still works
    (``process.skip_unused_imports``)."""

    assert _printed(VALIDATE_A_FRAME, "plain") == "True"
    assert _printed(VALIDATE_A_FRAME, "entry") == "False"
