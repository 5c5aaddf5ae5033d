"""The independent import-graph oracle: grimp's own graph of the same commit.

grimp needs the packages on disk and importable, so the commit's Python files are exported to a
temporary directory and grimp runs in a fresh interpreter whose ``sys.path`` starts there (so a
repository that shares a package name with something installed is still read from the export).
Files knowbase could not parse are exported empty: grimp would refuse them, and knowbase records
them as gaps rather than edges.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kb_resources.git.repo import GitRepo

_SCRIPT = r"""
import importlib.util, json, sys
args = json.loads(sys.stdin.read())
sys.path[:0] = args["roots"]
import grimp
for name in args["packages"]:
    spec = importlib.util.find_spec(name)
    origin = getattr(spec, "origin", None) or ""
    if not origin.startswith(args["export"]):
        raise SystemExit(f"package {name} resolved outside the export: {origin}")
graph = grimp.build_graph(*args["packages"], cache_dir=None)
edges = sorted([m, i] for m in graph.modules for i in graph.find_modules_directly_imported_by(m))
print(json.dumps({"modules": sorted(graph.modules), "edges": edges}))
"""


@dataclass(frozen=True, slots=True)
class GrimpGraph:
    """grimp's modules and internal import edges for the exported packages."""

    modules: frozenset[str]
    edges: frozenset[tuple[str, str]]


def export_tree(repo: GitRepo, dest: Path, files: Iterable[tuple[str, str]], blank: set[str]) -> None:
    """Write each (path, blob_id) under ``dest``; paths in ``blank`` are written empty."""
    root = dest.resolve()
    for path, blob_id in files:
        target = (dest / path).resolve()
        if root not in target.parents:
            continue  # never write outside the export
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(b"" if path in blank else repo.read_blob(blob_id))


def grimp_graph(
    repo: GitRepo,
    files: Iterable[tuple[str, str]],
    *,
    roots: Iterable[str],
    packages: Iterable[str],
    blank: set[str],
) -> GrimpGraph:
    """Build grimp's graph of ``packages`` from the commit's files (run in a subprocess)."""
    packages = sorted(packages)
    if not packages:
        return GrimpGraph(frozenset(), frozenset())
    with tempfile.TemporaryDirectory(prefix="kb-grimp-") as tmp:
        export = Path(tmp).resolve()
        export_tree(repo, export, files, blank)
        args = {
            "roots": [str(export / r) if r else str(export) for r in sorted(set(roots))],
            "packages": packages,
            "export": str(export),
        }
        proc = subprocess.run(
            [sys.executable, "-c", _SCRIPT],
            input=json.dumps(args),
            capture_output=True,
            text=True,
            check=False,
        )
    if proc.returncode != 0:
        raise RuntimeError(f"grimp failed: {proc.stderr.strip().splitlines()[-1:] or proc.returncode}")
    data = json.loads(proc.stdout)
    return GrimpGraph(modules=frozenset(data["modules"]), edges=frozenset((a, b) for a, b in data["edges"]))
