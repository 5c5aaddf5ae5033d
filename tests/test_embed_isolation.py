"""torch stays out of everything but embedding: ``kb index`` never imports it (nor
sentence-transformers), even though the Definitions it runs include the embedding assets; nor
polars and pandera, which its frame checks use in a process of their own (``check_process``).

Checked in a fresh interpreter, since the test process itself may have loaded the model.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.gitfixtures import build_repo
from tests.kbfixtures import KbEnv

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
HEAVY = ("torch", "sentence_transformers", "transformers", "polars", "pandera")

INDEX = """
import json, sys
from kb_assets.cli.main import main
code = main(["index", sys.argv[1]])
print(json.dumps({"code": code, "loaded": [m for m in sys.argv[2:] if m in sys.modules]}))
"""


def test_kb_index_never_imports_torch(kb_env: KbEnv, tmp_path: Path) -> None:
    """A full ``kb index`` run (Dagster, every extractor, publishing: every frame check passed)
    loads no torch, no sentence-transformers and no polars; Dagster being loaded shows the check
    looks at the right process."""
    repo = tmp_path / "repo"
    build_repo(FIXTURES / "git_basic", repo)
    env = {
        **os.environ,
        **kb_env.environ,
        "KB_EMBED_PROVIDER": "local",
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    proc = subprocess.run(
        [sys.executable, "-c", INDEX, str(repo), *HEAVY, "dagster"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["code"] == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("indexed ")
    assert result["loaded"] == ["dagster"]
