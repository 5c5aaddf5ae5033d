"""Where the call edges carried to the next commit (``call_carry``) live between commits.

``kb watch`` indexes commit after commit in one process and keeps them in memory
(``carried_between_commits``). Every other run (``kb index``, a run the branch sensor launched)
is a process of its own, so the edges go to a file per repository under ``KB_HOME``
(``carry/<repo key>.calls``, ~10 MB for Django), read by the next run whatever commit it
indexes: an entry only says which id an edge of given fields over given blobs has, which is true
of any commit. A missing, unreadable or outdated file (another parser or extractor version) is
an empty carry; writing it is best effort, since it only saves the next run some work.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kb_assets.core.extractors.base import Extractor
from kb_assets.core.extractors.call_carry import EdgeCarry
from kb_assets.core.extractors.calls import CallsExtractor
from kb_assets.core.extractors.registry import parser_version
from kb_assets.core.ids import ARTIFACT_ID_VERSION

_active: EdgeCarry | None = None
"""The in-memory carry, while ``carried_between_commits`` is active."""


@contextmanager
def carried_between_commits() -> Iterator[None]:
    """Within: the call edges are carried in memory from each commit this process indexes to the
    next (``kb watch``), and no carry file is read or written."""
    global _active  # noqa: PLW0603 - process state: the carry lives as long as the watch
    previous, _active = _active, EdgeCarry()
    try:
        yield
    finally:
        _active = previous


def carry_file(kb_home: Path, repo_key: str) -> Path:
    """The carry file of one repository."""
    return kb_home / "carry" / f"{repo_key}.calls"


def open_carry(extractor: Extractor, path: Path | None) -> EdgeCarry | None:
    """The carry ``extractor`` resolves against (only the call edges have one): the watch's, else
    the file's (``path``; None: no carry)."""
    if not isinstance(extractor, CallsExtractor):
        return None
    if _active is not None:
        return _active
    if path is None:
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return EdgeCarry()
    return EdgeCarry.load(data, _stamp())


def keep_carry(carry: EdgeCarry, path: Path | None) -> bool:
    """Store a file-backed carry for the next run (the watch's stays in memory); False if the
    file could not be written."""
    if carry is _active or path is None:
        return True
    written: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=path.name, delete=False) as out:
            written = out.name
            out.write(carry.dump(_stamp()))
        os.replace(written, path)  # readers see the old file or the new one, never a part
    except OSError:
        if written is not None:
            Path(written).unlink(missing_ok=True)
        return False
    return True


def _stamp() -> str:
    """Everything a carried id depends on besides the edge and its blobs."""
    return f"parser {parser_version()}; calls {CallsExtractor.version}; ids {ARTIFACT_ID_VERSION}"
