"""Listing the `.py` entries of a git tree straight from the object database.

Git stores paths as bytes; knowbase stores text. A path that is not valid UTF-8 is therefore not
listed but reported as a ``Gap`` (reason ``undecodable_path``) with a backslash-escaped rendering of
its bytes, so it is visible and never silently skipped. Paths are sorted by their UTF-8 bytes,
which for decodable paths is also the order of their code points.

Nothing here reads a blob's content: sizes come from the object header, symlink targets are never
read (a symlink is listed with ``FileMode.SYMLINK`` and size 0), and a submodule (gitlink) is listed
with ``FileMode.SUBMODULE``, the submodule commit id as ``blob_id`` and size 0.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import pygit2
from pygit2.enums import FileMode as GitMode

from kb_assets.core.models import FileEntry, FileMode, Gap

GAP_SOURCE = "git"
_PY_SUFFIX = b".py"
_TYPE_BITS = 0o170000
_REGULAR_BITS = 0o100000


@dataclass(frozen=True, slots=True)
class TreeListing:
    """The `.py` entries of one commit's tree, plus the ones that could not be listed."""

    files: tuple[FileEntry, ...]
    gaps: tuple[Gap, ...]


def decode_path(raw: bytes) -> str | None:
    """Turn a git path into text, or None when it is not UTF-8 (the caller records a gap)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def render_path(raw: bytes) -> str:
    """Show an undecodable path in a gap without losing which bytes it had."""
    return raw.decode("utf-8", "backslashreplace")


@functools.cache
def file_mode(git_mode: int) -> FileMode | None:
    """Map a git tree-entry mode to knowbase's FileMode; None for modes knowbase does not list.

    Answered once per mode: pygit2 hands each entry's mode as an ``enum.IntFlag``, whose ``&``
    goes through ``enum`` in Python, and a commit has a handful of distinct modes for thousands
    of entries (Django's 2,823 files: 29 of the listing's 43-55 ms)."""
    if git_mode == GitMode.LINK:
        return FileMode.SYMLINK
    if git_mode == GitMode.COMMIT:
        return FileMode.SUBMODULE
    if git_mode & _TYPE_BITS == _REGULAR_BITS:
        # Old trees may hold 100664 and the like; git itself treats any 100xxx as a regular file.
        return FileMode.EXECUTABLE if git_mode & 0o111 else FileMode.REGULAR
    return None


def list_python_files(odb: pygit2.Odb, tree: pygit2.Tree) -> TreeListing:
    """List every `.py` entry below ``tree`` without a checkout, sorted by path bytes."""
    found: list[tuple[bytes, FileEntry]] = []
    gaps: list[Gap] = []
    for raw_path, entry in _walk(tree):
        path = decode_path(raw_path)
        if path is None:
            gaps.append(_gap(raw_path, "undecodable_path", "the path is not valid UTF-8"))
            continue
        mode = file_mode(entry.filemode)
        if mode is None:
            gaps.append(_gap(raw_path, "unsupported_mode", f"git mode {entry.filemode:o}"))
            continue
        size = _size(odb, entry.id) if mode in (FileMode.REGULAR, FileMode.EXECUTABLE) else 0
        if size is None:
            gaps.append(_gap(raw_path, "missing_blob", f"blob {entry.id} is not in the object database"))
            continue
        found.append((raw_path, FileEntry(path=path, blob_id=str(entry.id), mode=mode, size=size)))
    found.sort(key=lambda item: item[0])
    gaps.sort(key=lambda gap: (gap.path, gap.reason))
    return TreeListing(files=tuple(entry for _, entry in found), gaps=tuple(gaps))


def is_python_path(raw_path: bytes) -> bool:
    """Say whether a git path is one knowbase indexes (it ends in `.py`)."""
    return raw_path.endswith(_PY_SUFFIX)


def _walk(tree: pygit2.Tree) -> list[tuple[bytes, pygit2.Object]]:
    """Every non-tree `.py` entry below ``tree`` with its full path, iteratively (no recursion limit)."""
    out: list[tuple[bytes, pygit2.Object]] = []
    stack: list[tuple[bytes, pygit2.Tree]] = [(b"", tree)]
    while stack:
        prefix, current = stack.pop()
        for entry in current:
            name = entry.raw_name
            if name is None:  # only objects looked up by id lack a name; tree entries always have one
                continue
            if isinstance(entry, pygit2.Tree):
                stack.append((prefix + name + b"/", entry))
            elif is_python_path(name):
                out.append((prefix + name, entry))
    return out


def _size(odb: pygit2.Odb, oid: pygit2.Oid) -> int | None:
    """The blob's size from its object header (no content is inflated), None when it is missing."""
    try:
        return odb.read_header(oid)[1]
    except (KeyError, pygit2.GitError):
        return None


def _gap(raw_path: bytes, reason: str, detail: str) -> Gap:
    """A gap for a tree entry that could not be listed."""
    return Gap(path=render_path(raw_path), reason=reason, detail=detail, source=GAP_SOURCE)
