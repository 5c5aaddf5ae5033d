"""One commit of history as the mine pass sees it: the spans it changed, its diff, its message.

Blobs of any commit are parsed through the same blob cache as ``kb index`` (``ensure_parsed``), so
mining a history parses each old file version once, ever.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from sqlalchemy import Engine

from kb_assets.core.extractors.registry import parser_version
from kb_assets.core.llm.floor import SpanText
from kb_assets.core.mine.changes import ChangedSpan, changed_paths, changed_spans, innermost, unified_diff
from kb_assets.core.models import READABLE_MODES, Span
from kb_assets.core.modules import map_modules
from kb_assets.core.spans import ParseLimits
from kb_assets.indexing.parse import ensure_parsed
from kb_assets.llm.spantext import span_text
from kb_resources.git.repo import GitRepo
from kb_resources.store import reads


@dataclass(frozen=True, slots=True)
class CommitChange:
    """What a (non-merge) commit changed in `.py` files, in spans and text."""

    sha: str
    parent: str | None
    message: str
    py_changed: bool
    changed: tuple[ChangedSpan, ...] = ()
    modules: Mapping[str, str] = field(default_factory=dict)
    """path -> module name at the commit."""
    shown: tuple[SpanText, ...] = ()
    """The innermost changed spans with their code at the commit (what the model is shown)."""
    diff: str = ""


def _tree(repo: GitRepo, sha: str | None) -> dict[str, str]:
    if sha is None:
        return {}
    return {f.path: f.blob_id for f in repo.python_files(sha) if f.mode in READABLE_MODES}


def commit_change(
    repo: GitRepo, engine: Engine, sha: str, parent: str | None, *, limits: ParseLimits, workers: int
) -> CommitChange:
    """The changed spans of ``sha`` against its first ``parent`` (None for a root commit)."""
    message = repo.commit_info(sha).message
    new, old = _tree(repo, sha), _tree(repo, parent)
    paths = changed_paths(new, old)
    if not paths:
        return CommitChange(sha, parent, message, py_changed=False)
    new_ids = {p: new[p] for p in paths if p in new}
    old_ids = {p: old[p] for p in paths if p in old}
    blob_ids = sorted(set(new_ids.values()) | set(old_ids.values()))
    ensure_parsed(repo, engine, blob_ids, limits=limits, workers=workers)
    with engine.connect() as conn:
        blobs = reads.load_parsed_blobs(conn, parser_version(), blob_ids)
    new_spans: dict[str, tuple[Span, ...]] = {p: blobs[b].spans for p, b in new_ids.items() if b in blobs}
    old_spans: dict[str, tuple[Span, ...]] = {p: blobs[b].spans for p, b in old_ids.items() if b in blobs}
    changed = changed_spans(new_spans, old_spans)
    new_text = {p: repo.read_blob(b).decode("utf-8", "replace") for p, b in new_ids.items()}
    old_text = {p: repo.read_blob(b).decode("utf-8", "replace") for p, b in old_ids.items()}
    modules = dict(map_modules(new).modules)
    lines = {p: text.splitlines() for p, text in new_text.items()}
    shown = tuple(span_text(c.path, modules.get(c.path), c.span, lines[c.path]) for c in innermost(changed))
    diff = unified_diff(new_text, old_text)
    return CommitChange(sha, parent, message, True, tuple(changed), modules, shown, diff)
