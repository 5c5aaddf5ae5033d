"""File arguments of the MCP tools: normalized, repository-relative, never escaping (pure tests)."""

from __future__ import annotations

import pytest

from kb_mcp.errors import UnsafePathError
from kb_mcp.paths import looks_like_path, normalize_path


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("pkg/mod.py", "pkg/mod.py"),
        ("./pkg//mod.py", "pkg/mod.py"),
        ("pkg\\sub\\mod.py", "pkg/sub/mod.py"),
        ("  pkg/mod.py ", "pkg/mod.py"),
        ("pkg/./sub/mod.py", "pkg/sub/mod.py"),
    ],
)
def test_paths_are_normalized(raw: str, expected: str) -> None:
    """Separators, ``./`` segments, doubled slashes and surrounding blanks normalize away."""
    assert normalize_path(raw) == expected


@pytest.mark.parametrize(
    "raw",
    [
        "../etc/passwd",
        "pkg/../../etc/passwd",
        "pkg/../mod.py",
        "..\\..\\Windows\\win.ini",
        "/etc/passwd",
        "C:\\Windows\\win.ini",
        "c:/x.py",
        "~/secrets.py",
        "pkg/mod.py\x00",
        "pkg/\nmod.py",
        "",
        "   ",
        ".",
        "./",
        "x" * 5000,
    ],
)
def test_unsafe_paths_are_refused(raw: str) -> None:
    """Absolute paths, any ``..`` segment (even one that stays inside), control characters, empty
    and over-long paths are refused with the reason, never rewritten into another file."""
    with pytest.raises(UnsafePathError) as caught:
        normalize_path(raw)
    assert caught.value.reason


def test_targets_that_look_like_files() -> None:
    """A slash, a backslash or a ``.py`` suffix means a file; a kind prefix means a logical key."""
    assert looks_like_path("pkg/mod.py")
    assert looks_like_path("mod.py")
    assert looks_like_path("pkg\\mod")
    assert not looks_like_path("pkg.mod.Class")
    assert not looks_like_path("api:GET /users/{id}")
    assert not looks_like_path("import:pkg.a->pkg.b")
