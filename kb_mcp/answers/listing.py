"""What ``list_knowledge`` answers: a snapshot's logical keys page by page, with an opaque cursor.

The cursor encodes the commit, the filters and the last key of the page (base64 of a small JSON
object). It is checked against the request, so a cursor cannot silently continue a different
listing; a cursor also pins the commit, so paging stays consistent while new commits get indexed.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import json
from collections.abc import Iterator
from typing import Any

from kb_assets.core.errors import BadInputError
from kb_mcp.context import ServeContext
from kb_mcp.errors import BadCursorError
from kb_mcp.models import ListAnswer, ListItem
from kb_mcp.snapshots import Entry, SnapshotIndex
from kb_mcp.units import load_units

MAX_CURSOR_CHARS = 4096
KINDS = (
    "import_edge",
    "public_symbol",
    "api_route",
    "entity",
    "event_handler",
    "call_edge",
    "process_path",
    "description",
    "decision",
)


def encode_cursor(sha: str, kind: str | None, prefix: str | None, last: Entry) -> str:
    """An opaque cursor that resumes after ``last``."""
    state = {
        "v": 1,
        "sha": sha,
        "kind": kind,
        "prefix": prefix,
        "after": [last.logical_key, last.kind, last.artifact_id],
    }
    return base64.urlsafe_b64encode(json.dumps(state, separators=(",", ":")).encode()).decode().rstrip("=")


def decode_cursor(cursor: str, kind: str | None, prefix: str | None) -> tuple[str, tuple[str, str, str]]:
    """The commit and the position a cursor resumes at (``BadCursorError`` if it is not ours)."""
    if len(cursor) > MAX_CURSOR_CHARS:
        raise BadCursorError("too long")
    try:
        state: Any = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        after = tuple(str(part) for part in state["after"])
        sha = str(state["sha"])
        ok = state["v"] == 1 and len(after) == 3
    except (ValueError, KeyError, TypeError, binascii.Error):
        raise BadCursorError("it is not a cursor from list_knowledge") from None
    if not ok:
        raise BadCursorError("it is not a cursor from list_knowledge")
    if state.get("kind") != kind or state.get("prefix") != prefix:
        raise BadCursorError("it was made for a different kind or prefix")
    return sha, (after[0], after[1], after[2])


def _matching(index: SnapshotIndex, kind: str | None, prefix: str, start: int) -> Iterator[Entry]:
    """Entries from position ``start`` on that have ``kind`` and ``prefix``, in key order."""
    for entry in index.entries[start:]:
        if not entry.logical_key.startswith(prefix):
            return
        if kind is None or entry.kind == kind:
            yield entry


def page(
    index: SnapshotIndex, kind: str | None, prefix: str, after: tuple[str, str, str] | None, limit: int
) -> tuple[list[Entry], int, bool]:
    """One page of entries after ``after``, the total that match, and whether more follow."""
    lo = bisect.bisect_left(index.keys, prefix)
    if not prefix and kind is None:
        total = len(index.entries)
    elif not prefix:
        total = index.counts().get(kind or "", 0)
    else:
        total = sum(1 for _ in _matching(index, kind, prefix, lo))
    start = lo
    if after is not None:
        start = max(lo, bisect.bisect_left(index.keys, after[0]))
        while start < len(index.entries) and _order(index.entries[start]) <= after:
            start += 1
    entries: list[Entry] = []
    more = False
    for entry in _matching(index, kind, prefix, start):
        if len(entries) == limit:
            more = True
            break
        entries.append(entry)
    return entries, total, more


def _check_kind(kind: str | None, index: SnapshotIndex) -> None:
    """Refuse a kind no extractor produces (a typo), naming the kinds there are."""
    known = set(KINDS) | set(index.counts())
    if kind is not None and kind not in known:
        raise BadInputError(f"unknown kind {kind!r}; kinds are: {', '.join(sorted(known))}")


def _order(entry: Entry) -> tuple[str, str, str]:
    """The listing order of an entry."""
    return (entry.logical_key, entry.kind, entry.artifact_id)


def list_answer(
    serve: ServeContext,
    *,
    kind: str | None,
    prefix: str | None,
    sha: str | None,
    limit: int,
    cursor: str | None,
) -> ListAnswer:
    """One page of the snapshot's units (after ``cursor``), filtered by kind and key prefix."""
    pinned, after = decode_cursor(cursor, kind, prefix) if cursor else (None, None)
    with serve.reading(sha if sha and sha.strip() else pinned) as (conn, commit, view):
        if pinned is not None and commit != pinned:
            raise BadCursorError("it was made for a different sha")
        index = serve.index(conn, commit)
        _check_kind(kind, index)
        entries, total, more = page(index, kind, prefix or "", after, limit)
        units = load_units(conn, view, commit, entries)
    items = [ListItem(**u.model_dump(include=set(ListItem.model_fields))) for u in units]
    next_cursor = encode_cursor(commit, kind, prefix, entries[-1]) if more and entries else None
    return ListAnswer(sha=commit, kind=kind, prefix=prefix, total=total, items=items, next_cursor=next_cursor)
