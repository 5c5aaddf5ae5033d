"""File arguments made safe: repository-relative, ``/``-separated, normalized, never escaping.

Paths only ever select rows (they are bound parameters, and nothing is read from disk), but a
path that could name something outside the repository is refused rather than silently rewritten
into another file, so the model learns what went wrong.
"""

from __future__ import annotations

import posixpath
import re

from kb_mcp.errors import UnsafePathError

MAX_PATH_CHARS = 4096
_DRIVE = re.compile(r"^[A-Za-z]:")
_KEY_PREFIX = re.compile(r"^[a-z_]{2,}:")


def normalize_path(raw: str) -> str:
    """The canonical repository-relative form of ``raw``, or ``UnsafePathError``.

    Backslashes become ``/``; ``./`` segments and duplicate slashes collapse. Absolute paths
    (``/etc``, ``C:\\x``, ``~``), any ``..`` segment, NUL and control characters are refused.
    """
    if not raw or not raw.strip():
        raise UnsafePathError(raw, "empty")
    if len(raw) > MAX_PATH_CHARS:
        raise UnsafePathError(raw[:80] + "...", f"longer than {MAX_PATH_CHARS} characters")
    if any(ord(ch) < 32 for ch in raw):
        raise UnsafePathError(raw, "contains control characters")
    path = raw.strip().replace("\\", "/")
    if path.startswith(("/", "~")) or _DRIVE.match(path):
        raise UnsafePathError(raw, "absolute paths are not allowed")
    if ".." in path.split("/"):
        raise UnsafePathError(raw, "'..' segments are not allowed")
    normalized = posixpath.normpath(path)
    if normalized in (".", ""):
        raise UnsafePathError(raw, "names the repository root, not a file")
    return normalized


def looks_like_path(target: str) -> bool:
    """Whether a ``get_knowledge`` target is meant as a file rather than a key or dotted path."""
    if _KEY_PREFIX.match(target):
        return False  # a logical key such as ``api:GET /users``
    return "/" in target or "\\" in target or target.endswith((".py", ".pyi"))
