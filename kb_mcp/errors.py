"""Mistakes a model can fix, each carrying its evidence and a suggestion of what to try instead.

The tools raise these; ``kb_mcp.tools.common`` turns every ``BadInputError`` into an ordinary tool
error (``is_error`` with this message) and anything else into a protocol error.
"""

from __future__ import annotations

from collections.abc import Sequence

from kb_assets.core.errors import BadInputError


def _suggest(suggestions: Sequence[str]) -> str:
    """`` Did you mean: a, b?`` or nothing."""
    return f" Did you mean: {', '.join(suggestions)}?" if suggestions else ""


class UnsafePathError(BadInputError):
    """A file argument that is not a repository-relative path (absolute, ``..``, NUL, empty)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(
            f"{path!r} is not a repository-relative file path ({reason}); "
            "give a path like 'pkg/module.py' relative to the repository root"
        )
        self.path = path
        self.reason = reason


class UnknownFileError(BadInputError):
    """The commit has no file at this path."""

    def __init__(self, path: str, sha: str, suggestions: Sequence[str]) -> None:
        super().__init__(
            f"no file {path!r} at commit {sha[:12]}.{_suggest(suggestions)} "
            "Use list_knowledge or get_knowledge with a module name to find files."
        )
        self.path = path
        self.sha = sha
        self.suggestions = tuple(suggestions)


class LineOutOfRangeError(BadInputError):
    """A line number outside the file at that commit."""

    def __init__(self, path: str, line: int, line_count: int, sha: str) -> None:
        super().__init__(
            f"line {line} is out of range: {path} has {line_count} lines at commit {sha[:12]}; "
            f"give a line between 1 and {line_count}"
        )
        self.path = path
        self.line = line
        self.line_count = line_count
        self.sha = sha


class UnknownTargetError(BadInputError):
    """Nothing in the snapshot matches a ``get_knowledge`` target."""

    def __init__(self, target: str, sha: str, suggestions: Sequence[str]) -> None:
        super().__init__(
            f"nothing matches {target!r} at commit {sha[:12]}.{_suggest(suggestions)} "
            "A target is a logical key (e.g. 'import:pkg.a->pkg.b'), a dotted path ('pkg.mod.Class'), "
            "a module ('pkg.mod') or a file ('pkg/mod.py'); list_knowledge with a prefix shows what exists."
        )
        self.target = target
        self.sha = sha
        self.suggestions = tuple(suggestions)


class NotIndexedCommitError(BadInputError):
    """A commit that exists in git but has no published snapshot."""

    def __init__(self, rev: str, sha: str, indexed: Sequence[str]) -> None:
        hint = f" Indexed commits on this branch (newest first): {', '.join(indexed)}." if indexed else ""
        super().__init__(
            f"commit {sha[:12]} ({rev}) is not indexed, so there is no knowledge for it.{hint} "
            "Omit sha to use the newest indexed commit."
        )
        self.rev = rev
        self.sha = sha
        self.indexed = tuple(indexed)


class BadCursorError(BadInputError):
    """A ``list_knowledge`` cursor that this server did not hand out for these arguments."""

    def __init__(self, reason: str) -> None:
        super().__init__(
            f"invalid cursor ({reason}); pass back next_cursor exactly as returned, with the same "
            "kind, prefix and sha, or omit cursor to start from the first page"
        )
        self.reason = reason


class NothingIndexedError(BadInputError):
    """The store has no published snapshot at all."""

    def __init__(self, repo: str) -> None:
        super().__init__(f"nothing in {repo} is indexed yet; run `kb index {repo}` first")
        self.repo = repo
