"""Ingest: resolve a commit, list its Python files, name their modules, pick the base to reuse.

This is the ``commit_tree`` step. It reads git only through ``GitRepo`` and writes the commit's
file list in one transaction, so later steps never touch the git tree listing again.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Engine

from kb_assets.core.errors import BadInputError
from kb_assets.core.models import READABLE_MODES, FileEntry
from kb_assets.core.modules import ModuleMap, map_modules
from kb_resources.git.repo import GitRepo
from kb_resources.store import reads, writes


@dataclass(frozen=True, slots=True)
class CommitTree:
    """What ingest learned about a commit."""

    sha: str
    base_sha: str | None
    mode: str
    files: tuple[FileEntry, ...]
    changed: int
    module_map: ModuleMap


def choose_base(repo: GitRepo, engine: Engine, sha: str, *, parent: str | None, full: bool) -> str | None:
    """The already-indexed commit to reuse: ``--parent`` if given, else the first indexed first-parent
    ancestor; None for ``--full`` or when nothing before this commit is indexed."""
    if full:
        return None
    with engine.connect() as conn:
        published = reads.published_commits(conn)
    if parent is not None:
        base = repo.resolve(parent)
        if base not in published:
            raise BadInputError(
                f"--parent {parent} ({base[:12]}) is not indexed; index it first or drop --parent"
            )
        return base
    for ancestor in repo.first_parent_chain(sha, limit=10_000)[1:]:
        if ancestor in published:
            return ancestor
    return None


def ingest_commit(repo: GitRepo, engine: Engine, sha: str, *, parent: str | None, full: bool) -> CommitTree:
    """Record the commit and its file list (with module names) and decide full vs incremental."""
    info = repo.commit_info(sha)
    files = repo.python_files(sha)
    module_map = map_modules(f.path for f in files if f.mode in READABLE_MODES)
    base = choose_base(repo, engine, sha, parent=parent, full=full)
    changed = len(repo.changed_paths(base, sha)) if base is not None else len(files)
    rows = [
        (
            f.path,
            f.blob_id,
            f.mode.value,
            f.size,
            module_map.modules.get(f.path),
            f.path.endswith("__init__.py"),
        )
        for f in files
    ]
    with engine.begin() as conn:
        writes.upsert_commit(
            conn, sha=sha, tree_id=info.tree_id, parents=list(info.parents), committed_at=info.committed_at
        )
        writes.replace_commit_files(conn, sha, rows)
    mode = "incremental" if base is not None else "full"
    return CommitTree(sha=sha, base_sha=base, mode=mode, files=files, changed=changed, module_map=module_map)
