"""Hostile repositories: whatever a commit holds, ``kb index`` records gaps (or exits 2 with one
line), never crashes, never hangs, never reads outside the repository.

Extends ``tests/test_hostile_files.py`` (NUL bytes, Latin-1, a syntax error, an oversized file,
file symlinks) with nesting 3,000 deep, a 6 MB generated module, non-Python files named ``.py``,
directory symlinks, a submodule, hostile path names (newline, escape sequence, tab, bidi, emoji,
invalid UTF-8, leading dashes) and the per-file parse time limit. A repository without commits
is ``tests/test_cli_errors.py::test_empty_repository_exits_2``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.gitfixtures import commit_tree, init_repo, run_git
from tests.kbfixtures import KbEnv

DEEP = 3000
SIX_MB = "".join(f"def f{i}(a, b):\n    return a + b * {i}\n\n\n" for i in range(150_000))
assert len(SIX_MB) > 6_000_000

HOSTILE: dict[str, bytes | str] = {
    "ok.py": "import json\n",
    # nesting 3,000 deep in every shape tree-sitter and the walkers may recurse on
    "deep/parens.py": "import os\nx = " + "(" * DEEP + "1" + ")" * DEEP + "\n",
    "deep/lists.py": "x = " + "[" * DEEP + "]" * DEEP + "\n",
    "deep/calls.py": "import os\nx = " + "os.f(" * DEEP + "1" + ")" * DEEP + "\n",
    "deep/lambdas.py": "x = " + "lambda: " * DEEP + "1\n",
    "deep/attrs.py": "import os\nx = os" + ".a" * DEEP + "\n",
    "deep/binops.py": "x = " + " + ".join(["1"] * 50_000) + "\n",
    # (indentation 1,000 deep: 3,000 would be a 4.5 MB file of spaces)
    "deep/blocks.py": "".join(" " * i + "if x:\n" for i in range(1000)) + " " * 1000 + "import json\n",
    "deep/defs.py": "".join(" " * i + f"def f{i}():\n" for i in range(300)) + " " * 300 + "pass\n",
    "generated.py": SIX_MB,
    # not Python, but named .py
    "not_python/image.py": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00",
    "not_python/script.py": "const x = require('y');\nfunction f() { return {a: 1}; }\n",
    "not_python/shell.py": "#!/bin/sh\necho $HOME && exit 1\n",
    "not_python/utf16.py": "import os\n".encode("utf-16"),
    "not_python/data.py": '{"a": [1, 2, {"b": null}]}\n',
    "encodings/bom.py": b"\xef\xbb\xbfimport os\n",
    "encodings/crlf.py": b"import os\r\nimport sys\r\n",
    "encodings/empty.py": "",
    "encodings/blank.py": "  \n\n\t\n",
    # path names
    "names/new\nline.py": "def f(:\n",
    "names/esc\x1b[2Jape.py": "import json\n",
    "names/tab\there.py": "import json\n",
    "names/bidi\u202etxt.py": "import json\n",
    "names/\U0001f600 e\u0301 \u6a21\u5757.py": "import json\n",
    "names/bad\udcff.py": "import json\n",
    "names/-rf.py": "import json\n",
    "names/--help.py": "import json\n",
}
SYMLINKS = {
    "links/etc": "/etc",
    "links/root": "/",
    "links/here": ".",
    "links/up": "../..",
    "links/outside.py": "../../outside.py",
    "links/passwd.py": "/etc/passwd",
}


def _add_submodule(repo: Path, path: str, commit: str) -> str:
    """Commit a gitlink (a submodule entry pointing at ``commit``) plus its .gitmodules."""
    (repo / ".gitmodules").write_text(f'[submodule "vendor"]\n\tpath = {path}\n\turl = ../vendor\n')
    run_git(repo, "add", ".gitmodules")
    run_git(repo, "update-index", "--add", "--cacheinfo", f"160000,{commit},{path}")
    run_git(repo, "commit", "-q", "-m", "add a submodule")
    return run_git(repo, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    (root / "outside.py").write_text("import secrets_outside_the_repository\n")
    repo = init_repo(root / "repo")
    first = commit_tree(repo, HOSTILE, "hostile", symlinks=SYMLINKS)
    _add_submodule(repo, "vendor/lib.py", first)
    return repo


def _gap_lines(stdout: str) -> dict[str, str]:
    """gap reason by path (as printed: control characters escaped) from ``kb index`` output."""
    reasons = {}
    for line in stdout.splitlines()[1:]:
        assert line.startswith("gap "), line
        where, _, rest = line.removeprefix("gap ").partition(": ")
        reasons[where.rsplit(":", 1)[0] if where.rsplit(":", 1)[-1].isdigit() else where] = rest.split(" ")[0]
    return reasons


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_a_hostile_repository_is_gaps_never_a_crash(kb_env: KbEnv, hostile: Path) -> None:
    """Every hostile file is indexed or is a gap with its reason; output stays one line per gap;
    nothing outside the repository is read; re-indexing gives the same ids."""
    res = kb_env.kb("index", hostile, "--no-verify")
    assert res.code == 0, res.stderr
    assert res.stdout.startswith("indexed ")
    assert all(line.isprintable() for line in res.stdout.splitlines()), res.stdout
    reasons = _gap_lines(res.stdout)
    expected = {
        "generated.py": "too_large",
        "not_python/image.py": "binary",
        "not_python/utf16.py": "binary",
        "not_python/script.py": "syntax_error",
        "not_python/shell.py": "syntax_error",
        "names/new\\x0aline.py": "syntax_error",
        "names/bad\\xff.py": "undecodable_path",
        "links/outside.py": "symlink",
        "links/passwd.py": "symlink",
        "vendor/lib.py": "submodule",
    }
    assert {path: reasons.get(path) for path in expected} == expected
    # deep indentation is beyond tree-sitter's indent stack: a syntax gap, not a crash
    assert reasons.get("deep/blocks.py") in (None, "syntax_error", "too_deep")
    assert not {p: r for p, r in reasons.items() if p.startswith("deep/") and p != "deep/blocks.py"}

    records = kb_env.kb("export", hostile).jsonl()
    keys = {r["logical_key"] for r in records}
    assert {  # folders without __init__.py are import roots, so modules are top-level names
        "import:ok->json",
        "import:parens->os",
        "import:calls->os",
        "import:attrs->os",
        "import:bom->os",
        "import:crlf->os",
        "import:crlf->sys",
        "import:esc\x1b[2Jape->json",
        "import:\U0001f600 e\u0301 \u6a21\u5757->json",
    } <= keys
    files = {g["file"] for r in records for g in r["grounding"]}
    assert "names/esc\x1b[2Jape.py" in files  # stored exactly; only terminal output escapes it
    assert not any(f.startswith(("links/", "vendor/")) for f in files)
    everything = res.stdout + json.dumps(records) + kb_env.kb("spans", hostile).stdout
    assert "secrets_outside" not in everything
    assert "root:" not in everything  # /etc/passwd's content

    shown = kb_env.kb("show", hostile, "--limit", "50")
    assert shown.code == 0
    assert all(line.isprintable() for line in shown.stdout.splitlines())

    again = kb_env.kb("index", hostile, "--no-verify", "--full")
    assert again.code == 0, again.stderr
    assert {r["artifact_id"] for r in kb_env.kb("export", hostile).jsonl()} == {
        r["artifact_id"] for r in records
    }


@pytest.mark.timeout(300)
def test_the_parse_time_limit_turns_a_slow_file_into_a_gap(kb_env: KbEnv, tmp_path: Path) -> None:
    """With KB_PARSE_TIMEOUT tiny, a large file stops parsing at the limit and becomes a
    ``parse_timeout`` gap; the run still publishes the rest."""
    repo = init_repo(tmp_path / "slow")
    big = "".join(f"x{i} = [{i}, ({i} + 1) * 2, {{'k': {i}}}]\n" for i in range(20_000))
    commit_tree(repo, {"big.py": big, "ok.py": "import json\n"}, "slow")
    kb_env.extra["KB_PARSE_TIMEOUT"] = "0.001"
    res = kb_env.kb("index", repo, "--no-verify")
    assert res.code == 0, res.stderr
    reasons = _gap_lines(res.stdout)
    assert reasons["big.py"] == "parse_timeout"
