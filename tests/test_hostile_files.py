"""Files knowbase cannot understand become recorded gaps: never a crash, never a read outside the
repository, and the rest of the commit is still indexed."""

from __future__ import annotations

from pathlib import Path

from tests.gitfixtures import commit_tree, init_repo
from tests.kbfixtures import KbEnv


def test_hostile_files_are_gaps_and_the_rest_is_indexed(kb_env: KbEnv, tmp_path: Path) -> None:
    """NUL bytes, invalid UTF-8, a syntax error, an oversized file and symlinks (out of the repo and
    inside it) each yield one gap with its reason; a normal file next to them is indexed."""
    outside = tmp_path / "outside.py"
    outside.write_text("import secrets_outside\n")
    repo = init_repo(tmp_path / "hostile")
    commit_tree(
        repo,
        {
            "ok.py": "import json\n",
            "nul.py": b"import os\x00\n",
            "latin1.py": "x = 'caf\xe9'\n".encode("latin-1"),
            "broken.py": "def f(:\n",
            "big.py": "x = 1\n" * 400,
            "empty.py": "",
            "dir with space/uni\u00e7ode.py": "import json\n",
        },
        "hostile",
        symlinks={"evil.py": "/etc/passwd", "escape.py": "../outside.py"},
    )
    kb_env.extra["KB_MAX_FILE_BYTES"] = "1000"
    res = kb_env.kb("index", repo)
    assert res.code == 0, res.stderr
    reasons = {}
    for line in res.stdout.splitlines()[1:]:
        path, _, rest = line.removeprefix("gap ").partition(": ")
        reasons[path.split(":")[0]] = rest.split(" ")[0]
    assert reasons == {
        "nul.py": "binary",
        "latin1.py": "not_utf8",
        "broken.py": "syntax_error",
        "big.py": "too_large",
        "evil.py": "symlink",
        "escape.py": "symlink",
    }
    keys = {r["logical_key"] for r in kb_env.kb("export", repo).jsonl()}
    assert keys == {"import:ok->json", "import:uni\u00e7ode->json"}
    assert "secrets_outside" not in res.stdout
