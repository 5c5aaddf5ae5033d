"""The fingerprint normalization: formatting-only differences vanish, meaning-bearing ones do not."""

from __future__ import annotations

import io
import keyword
import textwrap
import tokenize
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kb_assets.core import treesitter as ts
from kb_assets.core.fingerprint import tokenize as walk_tokens
from kb_assets.core.spans import parse_source

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "identity"


def span_ids(source: str) -> list[tuple[str, str, str]]:
    """(kind, fq_symbol_path, span_id) of every span, in order."""
    result, gaps = parse_source(textwrap.dedent(source).encode())
    assert result is not None, gaps
    return [(s.kind.value, s.fq_symbol_path, s.span_id) for s in result.spans]


def tokens(source: str) -> str:
    """The normalized token stream, readable (for assertion messages)."""
    data = textwrap.dedent(source).encode()
    return b" ".join(walk_tokens(ts.parse(data).root_node, data).tokens).decode("utf-8", "replace")


SAME = [
    ("x = 'a'", 'x = "a"'),
    ("x = 'a'", 'x = """a"""'),
    ("x = u'a'", "x = 'a'"),
    ("x = B'a'", "x = b'a'"),
    ("x = R'\\d'", "x = '\\\\d'"),
    ("x = 'it\\'s'", 'x = "it\'s"'),
    ("x = '\\x41\\N{EM DASH}\\u00e9'", "x = 'A\u2014\u00e9'"),
    ("x = '\\xAB'", "x = '\\xab'"),
    ("x = 'a' 'b'", "x = 'ab'"),
    ("x = 'a' f'{b}' 'c'", "x = f'a{b}c'"),
    ("x = f'{a!r:>{w}}'", 'x = f"{a!r:>{w}}"'),
    ("x = F'{a}{{b}}'", "x = f'{a}{{b}}'"),
    ("x = (1)", "x = 1"),
    ("x = ((a + b))", "x = a + b"),
    ("def f():\n    return (a, b)", "def f():\n    return a, b"),
    ("for (x, y) in z: pass", "for x, y in z: pass"),
    ("(x) = 1", "x = 1"),
    ("del (a), b", "del a, b"),
    ("x = 0XFF", "x = 255"),
    ("x = 0xff", "x = 0o377"),
    ("x = 0B11111111", "x = 255"),
    ("x = 1_000", "x = 1000"),
    ("x = 1.5E3", "x = 1500.0"),
    ("x = 10J", "x = 10j"),
    ("f(a, b,)", "f(a, b)"),
    ("x = [1, 2,]", "x = [1, 2]"),
    ("x = {'k': 1,}", "x = {'k': 1}"),
    ("class A(): pass", "class A: pass"),
    ("f(x for x in y)", "f((x for x in y))"),
    ("x = 1 + \\\n    2", "x = 1 + 2"),
    ("x = 1  # a comment", "x = 1"),
    ("if a:\n    b = 1", "if a:\n\n\n            b = 1"),
    ("x = 1; y = 2", "x = 1\ny = 2"),
    ("def f() -> A[B, C]: pass", "def f() -> (\n    A[B, C]\n): pass"),
    ("x: A | B[C] | None = 1", "x: (A | B[C] | None) = 1"),
    ("x = a, *b.c[1:]", "x = (a, *b.c[1:])"),
    ("if (n := a if c else b): pass", "if (n := (a if c else b)): pass"),
    ("match x:\n    case (A | B): pass", "match x:\n    case A | B: pass"),
    ("with (open(a)) as f: pass", "with open(a) as f: pass"),
    ("try: pass\nexcept (E): pass", "try: pass\nexcept E: pass"),
    ('def f():\n    "doc"\n    return 1', "def f():\n    '''Another doc.\n\n    Long.'''\n    return 1"),
    ('def f():\n    "doc"\n    return 1', "def f():\n    return 1"),
    ('"""Module doc."""\nx = 1', "x = 1"),
    ('class C:\n    # c\n    "doc"\n    x = 1', "class C:\n    x = 1"),
]

DIFFERENT = [
    ("x = a + b", "x = a - b"),
    ("x = a * b", "x = a @ b"),
    ("x = a is b", "x = a is not b"),
    ("x = a in b", "x = a not in b"),
    ("x = a < b", "x = a <= b"),
    ("x = a and b", "x = a or b"),
    ("x = not a", "x = a"),
    ("x += 1", "x -= 1"),
    ("x = (a + b) * c", "x = a + b * c"),
    ("def f(): pass", "async def f(): pass"),
    ("async def f():\n    await g()", "async def f():\n    g()"),
    ("def f():\n    yield x", "def f():\n    yield from x"),
    ("x = 1", "x = 2"),
    ("x = 1", "x = 1.0"),
    ("x = 1", "x = '1'"),
    ("x = 'a'", "x = 'b'"),
    ("x = b'a'", "x = 'a'"),
    ("x = 'a\\nb'", "x = r'a\\nb'"),
    ("x = 'a'", "x = f'a{b}'"),
    ("x[a,]", "x[a]"),
    ("x[1:]", "x[:1]"),
    ("x[1:2]", "x[1::2]"),
    ("x = (1,)", "x = (1)"),
    ("x = a,", "x = a"),
    ("f(a)", "f(a, b)"),
    ("f(a, b)", "f(b, a)"),
    ("f(a)(b)", "f(a, b)"),
    ("x = f'{a=}'", "x = f'{a}'"),
    ("x = f'{a:>10}'", "x = f'{a:<10}'"),
    ("x = f'{a!r}'", "x = f'{a!s}'"),
    ("x: int", "x = int"),
    ("a = 1\nb = 2", "a = 1"),
    ("def f(): pass", "def g(): pass"),
    ("from . import x", "from .. import x"),
    ("@d\ndef f(): pass", "def f(): pass"),
    ("def f():\n    x = 'not a docstring'\n    'doc'", "def f():\n    x = 'not a docstring'"),
    ("def f():\n    b'bytes are no docstring'", "def f():\n    b'other'"),
    ("x = [a, b]", "x = (a, b)"),
    ("x = {a}", "x = [a]"),
    ("class A(B): pass", "class A: pass"),
]


@pytest.mark.parametrize(("left", "right"), SAME)
def test_formatting_only_differences_keep_every_id(left: str, right: str) -> None:
    """Quote style, prefixes' case, escapes, parentheses, numeric spelling, tuples, trailing commas,
    continuations, comments, blank lines, docstrings: none of them is identity."""
    assert span_ids(left) == span_ids(right), f"\n{tokens(left)}\n{tokens(right)}"


@pytest.mark.parametrize(("left", "right"), DIFFERENT)
def test_meaningful_differences_change_the_module_id(left: str, right: str) -> None:
    """Operators, literal values and types (bytes vs str), structure, arguments, names: all identity."""
    assert span_ids(left)[0] != span_ids(right)[0], f"\n{tokens(left)}\n{tokens(right)}"


def test_editing_a_method_changes_its_class_and_module_but_not_its_sibling() -> None:
    """Nested definitions are part of the outer fingerprint; a sibling's id stays."""
    before = "class C:\n    def a(self): return 1\n    def b(self): return 2\n"
    after = before.replace("return 1", "return 3")
    changed = [x[1] for x, y in zip(span_ids(before), span_ids(after), strict=True) if x != y]
    assert changed == ["<module>", "C", "C.a"]


def _fixture_sources() -> list[str]:
    return [p.read_text("utf-8") for p in sorted(FIXTURES.glob("*.py"))]


def _line_ends(source: str) -> list[tuple[int, int]]:
    """(row, column) of every line end where a comment may go: after a NEWLINE or NL token."""
    toks = tokenize.generate_tokens(io.StringIO(source).readline)
    return sorted({t.start for t in toks if t.type in (tokenize.NEWLINE, tokenize.NL) and t.start[0] > 2})


def _indent_after(lines: list[str], row: int) -> str:
    """Indentation of the next line (tree-sitter mis-parses a dedented comment before a def)."""
    following = lines[row] if row < len(lines) else lines[row - 1]
    return following[: len(following) - len(following.lstrip())]


def _insert_comments(source: str, where: list[tuple[int, int]], text: str) -> str:
    lines = source.splitlines(keepends=True)
    for row, col in sorted(set(where), reverse=True):
        line = lines[row - 1]
        lines[row - 1] = f"{line[:col]}  # {text}{line[col:]}"
        lines.insert(row, f"{_indent_after(lines, row)}# {text} (own line)\n")
    return "".join(lines)


_COMMENT_TEXT = st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), max_size=20).filter(
    lambda t: "coding" not in t
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), text=_COMMENT_TEXT)
def test_inserting_comments_never_changes_an_id(data: st.DataObject, text: str) -> None:
    """Comments at random line ends and on lines of their own are never identity."""
    for source in _fixture_sources():
        ends = _line_ends(source)
        where = data.draw(st.lists(st.sampled_from(ends), min_size=1, max_size=12))
        assert span_ids(_insert_comments(source, where, text)) == span_ids(source)


def _names(source: str) -> list[str]:
    toks = tokenize.generate_tokens(io.StringIO(source).readline)
    found = {t.string for t in toks if t.type == tokenize.NAME}
    return sorted(n for n in found if not keyword.iskeyword(n) and not keyword.issoftkeyword(n))


def _rename(source: str, old: str, new: str) -> str:
    toks = list(tokenize.generate_tokens(io.StringIO(source).readline))
    lines = source.splitlines(keepends=True)
    for t in reversed([t for t in toks if t.type == tokenize.NAME and t.string == old]):
        row, col = t.start
        lines[row - 1] = lines[row - 1][:col] + new + lines[row - 1][col + len(old) :]
    return "".join(lines)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), suffix=st.text("abcdefghijklmnopqrstuvwxyz_0123456789", min_size=1, max_size=8))
def test_renaming_any_identifier_changes_the_module_id(data: st.DataObject, suffix: str) -> None:
    """Renaming every occurrence of any identifier (a variable, a function, an attribute, a module)
    to a fresh name changes the module span id."""
    for source in _fixture_sources():
        old = data.draw(st.sampled_from(_names(source)))
        renamed = _rename(source, old, f"zz_{suffix}")
        assert renamed != source
        assert span_ids(renamed)[0] != span_ids(source)[0], old


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), delta=st.integers(min_value=1, max_value=10**6))
def test_changing_any_number_changes_the_module_id(data: st.DataObject, delta: int) -> None:
    """Adding ``delta`` to any integer literal (respelled in decimal) changes the module span id."""
    for source in _fixture_sources():
        toks = tokenize.generate_tokens(io.StringIO(source).readline)
        numbers = [t for t in toks if t.type == tokenize.NUMBER and t.string.isdigit()]
        t = data.draw(st.sampled_from(numbers))
        row, col = t.start
        lines = source.splitlines(keepends=True)
        lines[row - 1] = f"{lines[row - 1][:col]}{int(t.string) + delta}{lines[row - 1][t.end[1] :]}"
        assert span_ids("".join(lines))[0] != span_ids(source)[0], t
