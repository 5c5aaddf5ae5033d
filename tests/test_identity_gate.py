"""THE identity-reproducibility gate: span ids follow code, not its formatting or its path.

The sample is ``fixtures/identity/*.py`` (a few hundred lines written in a deliberately
un-formatted style: classes, decorators, async, match, f-strings, nested defs, comprehensions, type
hints, long calls, backslashes, odd quotes and numerals), so every formatter below really rewrites
it; each test first checks that the rewrite happened, then that no span id moved.
"""

from __future__ import annotations

import ast
import io
import shutil
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

from kb_assets.core.models import Span
from kb_assets.core.spans import parse_source

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "identity"
NAMES = sorted(p.name for p in FIXTURES.glob("*.py"))

FORMATTERS = {
    "black": ["-m", "black", "-q"],
    "black-40": ["-m", "black", "-q", "--line-length", "40", "--skip-magic-trailing-comma"],
    "ruff": ["-m", "ruff", "format", "--isolated", "-q"],
    "ruff-40-single-quotes": [
        "-m",
        "ruff",
        "format",
        "--isolated",
        "-q",
        "--line-length",
        "40",
        "--config",
        "format.quote-style='single'",
    ],
}


def spans_of(source: bytes) -> tuple[Span, ...]:
    """The spans of a blob that must be understood."""
    result, gaps = parse_source(source)
    assert result is not None, gaps
    return result.spans


def ids(source: bytes) -> list[tuple[str, str, str]]:
    return [(s.kind.value, s.fq_symbol_path, s.span_id) for s in spans_of(source)]


def originals() -> dict[str, bytes]:
    return {name: (FIXTURES / name).read_bytes() for name in NAMES}


def test_the_sample_is_realistic() -> None:
    """The gate is only as strong as its sample: several files, hundreds of lines, every span kind."""
    sources = originals()
    assert len(sources) >= 3
    assert sum(s.count(b"\n") for s in sources.values()) >= 300
    kinds = {s.kind.value for source in sources.values() for s in spans_of(source)}
    assert kinds == {"module", "class", "function", "import", "assignment"}


@pytest.mark.parametrize("formatter", sorted(FORMATTERS))
def test_formatters_change_no_span_id(formatter: str, tmp_path: Path) -> None:
    """black and ruff format (default and at line length 40, ruff also with single quotes) rewrite
    every sample file and leave every span id, kind and qualified name as it was."""
    for name in NAMES:
        shutil.copy(FIXTURES / name, tmp_path / name)
    done = subprocess.run(
        [sys.executable, *FORMATTERS[formatter], str(tmp_path)], capture_output=True, check=False
    )
    assert done.returncode == 0, done.stderr.decode()
    for name, before in originals().items():
        after = (tmp_path / name).read_bytes()
        assert after != before, f"{formatter} left {name} untouched: the gate would prove nothing"
        assert ids(after) == ids(before), name


def test_twice_formatted_is_still_the_same() -> None:
    """Parsing the same bytes twice gives the same ids (nothing depends on time, order or state)."""
    for source in originals().values():
        assert ids(source) == ids(source)


def _with_comments(source: str) -> str:
    """A comment at the end of every line that can take one, and one on a line of its own after it
    (indented like the next line: tree-sitter-python cannot parse a *dedented* comment line between
    a decorator and its def inside a class, a parser limitation recorded as a syntax_error gap)."""
    toks = tokenize.generate_tokens(io.StringIO(source).readline)
    ends = sorted({t.start for t in toks if t.type in (tokenize.NEWLINE, tokenize.NL) and t.start[0] > 2})
    lines = source.splitlines(keepends=True)
    for row, col in reversed(ends):
        line = lines[row - 1]
        lines[row - 1] = f"{line[:col]}  # note {row}{line[col:]}"
        following = lines[row] if row < len(lines) else line
        indent = following[: len(following) - len(following.lstrip())]
        lines.insert(row, f"{indent}# a comment on its own line after line {row}\n")
    return "".join(lines)


def _docstrings(source: str) -> list[tuple[ast.Expr, bool]]:
    """Each docstring statement, and whether its body has other statements (so it can go)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0]
            value = first.value if isinstance(first, ast.Expr) else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(value, ast.Constant)
                and isinstance(value.value, str)
            ):
                found.append((first, len(node.body) > 1))
    return found


def _replace_docstrings(source: str, *, remove: bool) -> str:
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line.encode()))
    data = source.encode()
    edits = []
    for stmt, removable in _docstrings(source):
        assert stmt.end_lineno is not None
        assert stmt.end_col_offset is not None
        start = offsets[stmt.lineno - 1] + stmt.col_offset
        end = offsets[stmt.end_lineno - 1] + stmt.end_col_offset
        if remove and removable:
            edits.append((start, end, b""))
        elif not remove:
            edits.append((start, end, b"'''A different docstring,\n\n   spanning lines.'''"))
    for start, end, text in sorted(edits, reverse=True):
        data = data[:start] + text + data[end:]
    return data.decode()


def test_comments_and_docstrings_change_no_span_id() -> None:
    """Adding comments everywhere, rewriting every docstring and deleting every docstring (where the
    body keeps other statements) leaves every span id unchanged."""
    for name, raw in originals().items():
        source = raw.decode()
        assert _docstrings(source), f"{name} has no docstring to test with"
        for variant in (
            _with_comments(source),
            _replace_docstrings(source, remove=False),
            _replace_docstrings(source, remove=True),
        ):
            assert variant != source
            assert ids(variant.encode()) == ids(raw), name


def test_moving_a_file_changes_no_span_id(tmp_path: Path) -> None:
    """Span ids carry no path: the same blob at another path and name has the same spans."""
    for name, raw in originals().items():
        moved = tmp_path / "elsewhere" / "deeper" / f"renamed_{name}"
        moved.parent.mkdir(parents=True, exist_ok=True)
        moved.write_bytes(raw)
        assert spans_of(moved.read_bytes()) == spans_of(raw)
    assert "path" not in Span.__slots__


def _rename_def(source: bytes, old: str, new: str) -> bytes:
    assert source.count(f"def {old}(".encode()) == 1
    return source.replace(f"def {old}(".encode(), f"def {new}(".encode())


@pytest.mark.parametrize(
    ("name", "old", "changed"),
    [
        ("orders.py", "total", ["<module>", "Order", "Order.total"]),
        ("orders.py", "parse_amount", ["<module>", "parse_amount"]),
        ("pipeline.py", "outer", ["<module>", "outer", "outer.middle", "outer.middle.inner"]),
        ("legacy_style.py", "scaled", ["<module>", "Square", "Square.scaled"]),
    ],
)
def test_renaming_a_function_changes_exactly_its_own_ids(name: str, old: str, changed: list[str]) -> None:
    """Renaming one function changes its span id, its enclosing class/module span ids and the ids of
    definitions nested in it (their qualified names contain it), and no other span id."""
    before = spans_of((FIXTURES / name).read_bytes())
    after = spans_of(_rename_def((FIXTURES / name).read_bytes(), old, "renamed"))
    assert len(before) == len(after)
    moved = [b.fq_symbol_path for b, a in zip(before, after, strict=True) if b.span_id != a.span_id]
    assert moved == changed
    for b, a in zip(before, after, strict=True):
        assert (b.kind, b.start_line, b.end_line) == (a.kind, a.start_line, a.end_line)
