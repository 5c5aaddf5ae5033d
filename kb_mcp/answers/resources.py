"""What the ``kb://`` resources say: the repository overview, one unit by id, one file's units.

Each is JSON at the newest indexed commit of the branch (a unit by id at the newest commit that
holds it). Registered by ``kb_mcp.resources``.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError

from kb_assets.core.errors import KbError
from kb_mcp.context import ServeContext
from kb_mcp.paths import normalize_path
from kb_mcp.units import load_unit_by_id
from kb_resources.store import reads

_ARTIFACT_ID = re.compile(r"[0-9a-f]{64}")


def overview(serve: ServeContext) -> dict[str, Any]:
    """The repository at a glance: branch, newest indexed commit, counts per kind, gaps."""
    with serve.store.engine.connect() as conn:
        view = serve.branch.view(conn)
        newest = view.newest
        counts = serve.index(conn, newest).counts() if newest else {}
        gaps = reads.gaps(conn, newest) if newest else []
        watched = reads.branches(conn)
    return {
        "repository": str(serve.repo.root),
        "branch": view.branch,
        "head": view.head,
        "newest_indexed": newest,
        "indexed_commits_on_branch": len(view.chain),
        "indexed_commits": len(view.published),
        "watched_branches": watched,
        "counts": counts,
        "gaps": {"total": len(gaps), "by_reason": dict(sorted(Counter(g.reason for g in gaps).items()))},
        "tools": "get_knowledge(target), find_provenance(file, line), list_knowledge(kind, prefix), "
        "search_knowledge(query), diff_knowledge(base, head)",
    }


def unit_json(serve: ServeContext, artifact_id: str) -> dict[str, Any]:
    """One unit by id, read at the newest commit of the branch that holds it (else any commit)."""
    if not _ARTIFACT_ID.fullmatch(artifact_id):
        raise ResourceNotFoundError(f"{artifact_id!r} is not an artifact id (64 lowercase hex digits)")
    with serve.store.engine.connect() as conn:
        view = serve.branch.view(conn)
        held = reads.snapshots_holding(conn, [artifact_id], view.published).get(artifact_id, set())
        on_branch = [sha for sha in view.chain if sha in held]
        sha = on_branch[0] if on_branch else min(held, default=None)
        unit = load_unit_by_id(conn, view, sha, artifact_id) if sha else None
    if unit is None:
        raise ResourceNotFoundError(f"no indexed commit holds unit {artifact_id}")
    return unit.model_dump(mode="json")


def file_json(serve: ServeContext, path: str) -> dict[str, Any]:
    """The units grounded in one file at the newest indexed commit, with the symbols they sit on."""
    try:
        path = normalize_path(path)
    except KbError as err:
        raise ResourceError(err.message) from None
    with serve.store.engine.connect() as conn:
        view = serve.branch.view(conn)
        sha = view.newest
        found = reads.file_at(conn, sha, path) if sha else None
        if sha is None or found is None:
            raise ResourceNotFoundError(f"no file {path!r} at the newest indexed commit")
        index = serve.index(conn, sha)
    symbols: dict[str, set[str]] = {}
    for unit in index.grounded.get(path, ()):
        symbols.setdefault(unit.artifact_id, set()).add(unit.fq_symbol_path)
    units = [
        {
            "artifact_id": e.artifact_id,
            "kind": e.kind,
            "logical_key": e.logical_key,
            "summary": e.summary,
            "grounded_on": sorted(symbols[e.artifact_id]),
        }
        for e in sorted((index.by_id[a] for a in symbols if a in index.by_id), key=lambda e: e.logical_key)
    ]
    return {"file": path, "sha": sha, "module": found.module, "line_count": found.line_count, "units": units}
