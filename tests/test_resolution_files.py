"""The call graph's resolutions file (``kb_assets.indexing.resolution_files``): a graph built from
the resolutions another process saved is the full build's, in another interpreter too; a file
another resolver wrote, or a damaged or missing one, is no file; the stamp follows every source
file of the resolver."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kb_assets.core import forked
from kb_assets.core.callgraph.graph import _build
from kb_assets.indexing import resolution_files
from kb_assets.indexing.resolution_files import ResolutionFile, code_digest
from tests.programs import program_from_files
from tests.test_call_graph_incremental import BASE, EDITS, NO_COPY, _kept, _program, _same_as_full
from tests.test_call_graph_parts import _ids

ROOT = Path(__file__).resolve().parent.parent


def _saved(path: Path) -> None:
    with ResolutionFile(path) as file:
        file.save(_kept(_program(BASE, 1)))


@pytest.mark.parametrize("workers", [0, 1], ids=["copy may write", "this process writes"])
def test_saved_resolutions_build_the_full_graph_after_each_edit(tmp_path: Path, workers: int) -> None:
    path = tmp_path / "repo.resolutions"
    forked.set_workers(workers)
    try:
        _saved(path)
    finally:
        forked.set_workers(0)
    loaded = ResolutionFile(path).load()
    assert loaded is not None
    assert loaded.sha == f"{1:040x}"
    for n, name in enumerate(sorted(EDITS), start=2):
        incremental, _ = _same_as_full(_program({**BASE, **EDITS[name]}, n), loaded)
        assert incremental.since == loaded.sha
        assert incremental.resolved is not None
        assert incremental.resolved < len(BASE)


def test_another_interpreter_builds_the_same_graph_from_the_file(tmp_path: Path) -> None:
    """Read back by another process (another string hash seed): the same call-edge ids as a full
    build here, from fewer files resolved."""
    path = tmp_path / "repo.resolutions"
    _saved(path)
    edited = {**BASE, **EDITS["inherited method removed"]}
    script = (
        "import json, pathlib, sys\n"
        "from kb_assets.core.callgraph.graph import _build\n"
        "from kb_assets.indexing.resolution_files import ResolutionFile\n"
        "from tests.programs import program_from_files\n"
        "from tests.test_call_graph_parts import _ids\n"
        "files = json.loads(sys.argv[2])\n"
        "program = program_from_files(files, sha='2' * 40)\n"
        "previous = ResolutionFile(pathlib.Path(sys.argv[1])).load()\n"
        "graph, _ = _build(program, 10**9, previous=previous, keep=True)\n"
        "print(json.dumps([graph.resolved, _ids(program, graph)]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": "12345"}
    command = [sys.executable, "-c", script, str(path), json.dumps(edited)]
    out = subprocess.run(command, check=False, capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    resolved, ids = json.loads(out.stdout)
    program = program_from_files(edited, sha="2" * 40)
    full, _ = _build(program, NO_COPY)
    assert ids == _ids(program, full)
    assert 0 < resolved < len(BASE)


def test_a_missing_damaged_or_foreign_file_is_no_file(tmp_path: Path) -> None:
    path = tmp_path / "repo.resolutions"
    assert ResolutionFile(path).load() is None
    _saved(path)
    good = path.read_bytes()
    header, _, body = good.partition(b"\n")
    for bad in (b"", b"not resolutions", header + b"\n" + body[: len(body) // 2], b"0" * 64 + b"\n" + body):
        path.write_bytes(bad)
        assert ResolutionFile(path).load() is None
    path.write_bytes(good)
    assert ResolutionFile(path).load() is not None


def test_a_file_that_cannot_be_written_is_skipped(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("a file where the folder should be")
    with ResolutionFile(blocked / "repo.resolutions") as file:
        file.save(_kept(_program(BASE, 1)))
    assert blocked.read_text() == "a file where the folder should be"


def test_the_stamp_follows_every_source_file_and_version(tmp_path: Path) -> None:
    root = tmp_path / "core"
    (root / "callgraph").mkdir(parents=True)
    (root / "callgraph" / "graph.py").write_text("x = 1\n")
    (root / "program.py").write_text("y = 2\n")
    first = code_digest(root, "v1")
    assert code_digest(root, "v1") == first
    assert code_digest(root, "v2") != first
    (root / "callgraph" / "graph.py").write_text("x = 2\n")
    assert code_digest(root, "v1") != first
    (root / "callgraph" / "graph.py").write_text("x = 1\n")
    (root / "callgraph" / "new.py").write_text("")
    assert code_digest(root, "v1") != first
    assert code_digest(tmp_path / "empty", "v1") is None
    assert resolution_files.stamp() == resolution_files.stamp()
    assert len(resolution_files.stamp() or b"") == 64


def test_without_the_resolvers_sources_no_file_is_read_or_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An installation whose ``kb_assets.core`` has no sources cannot tell one resolver from another."""
    path = tmp_path / "repo.resolutions"
    _saved(path)
    monkeypatch.setattr(resolution_files, "stamp", lambda: None)
    assert ResolutionFile(path).load() is None
    path.unlink()
    _saved(path)
    assert not path.exists()
