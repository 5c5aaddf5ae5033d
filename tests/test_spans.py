"""Spans of one blob: kinds, qualified names, lines, scopes, and the gaps for what is not understood."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tree_sitter import Node

from kb_assets.core import treesitter as ts
from kb_assets.core.models import Span, SpanKind
from kb_assets.core.spans import GapReason, ParsedSource, ParseLimits, parse_source

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "identity"

SAMPLE = '''\
"""A sample module."""
from __future__ import annotations
import os, a.b as ab
from ..pkg.mod import thing
from . import sibling
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["Order", "helper"]
__all__ += ["extra"]
RATE: float = 0.2
first, (second, *rest) = 1, (2, 3)
obj.attr = 1
table["key"] = 2


@register("orders")
@dataclass(frozen=True)
class Order:
    """An order."""

    limit = 10

    def total(self) -> int:
        import json

        return json.loads("1")

    async def fetch(self):
        def parse(raw):
            return raw

        return parse(await self.load())


def helper():
    class Local:
        def method(self):
            from os import path
            return path
    return Local
'''

EXPECTED = [
    (SpanKind.MODULE, "<module>", 1, 43),
    (SpanKind.IMPORT, "<import:__future__>", 2, 2),
    (SpanKind.IMPORT, "<import:os,a.b>", 3, 3),
    (SpanKind.IMPORT, "<import:..pkg.mod>", 4, 4),
    (SpanKind.IMPORT, "<import:.>", 5, 5),
    (SpanKind.IMPORT, "<import:typing>", 6, 6),
    (SpanKind.IMPORT, "<import:collections.abc>", 9, 9),
    (SpanKind.ASSIGNMENT, "__all__", 11, 11),
    (SpanKind.ASSIGNMENT, "__all__", 12, 12),
    (SpanKind.ASSIGNMENT, "RATE", 13, 13),
    (SpanKind.ASSIGNMENT, "first,second,rest", 14, 14),
    (SpanKind.CLASS, "Order", 19, 35),
    (SpanKind.FUNCTION, "Order.total", 26, 29),
    (SpanKind.IMPORT, "Order.total.<import:json>", 27, 27),
    (SpanKind.FUNCTION, "Order.fetch", 31, 35),
    (SpanKind.FUNCTION, "Order.fetch.parse", 32, 33),
    (SpanKind.FUNCTION, "helper", 38, 43),
    (SpanKind.CLASS, "helper.Local", 39, 42),
    (SpanKind.FUNCTION, "helper.Local.method", 40, 42),
    (SpanKind.IMPORT, "helper.Local.method.<import:os>", 41, 41),
]


def parsed(source: str | bytes) -> ParsedSource:
    """Parse source that must be understood."""
    data = source.encode() if isinstance(source, str) else source
    result, gaps = parse_source(data)
    assert gaps == ()
    assert result is not None
    return result


def shape(spans: tuple[Span, ...]) -> list[tuple[SpanKind, str, int, int]]:
    return [(s.kind, s.fq_symbol_path, s.start_line, s.end_line) for s in spans]


def test_sample_kinds_paths_and_lines() -> None:
    """Every kind, qualified name and line range of a sample, in pre-order with the module first."""
    assert shape(parsed(SAMPLE).spans) == EXPECTED


def test_decorated_definition_starts_at_its_first_decorator() -> None:
    """The decorators are part of the definition's span (and of its fingerprint)."""
    result = parsed(SAMPLE)
    order = next(s for s in result.spans if s.fq_symbol_path == "Order")
    assert SAMPLE.splitlines()[order.start_line - 1] == '@register("orders")'
    plain = parsed(SAMPLE.replace('@register("orders")\n', ""))
    decorated_less = next(s for s in plain.spans if s.fq_symbol_path == "Order")
    assert decorated_less.span_id != order.span_id


def test_imports_at_any_depth() -> None:
    """Imports inside functions, methods, class bodies and ``if TYPE_CHECKING:`` are spans too."""
    source = textwrap.dedent(
        """\
        import typing
        if typing.TYPE_CHECKING:
            import a
        try:
            import b
        except ImportError:
            b = None
        class C:
            import c
            def m(self):
                if True:
                    from d import e
        def f():
            from .g import h
        """
    )
    imports = [s.fq_symbol_path for s in parsed(source).spans if s.kind is SpanKind.IMPORT]
    assert imports == [
        "<import:typing>",
        "<import:a>",
        "<import:b>",
        "C.<import:c>",
        "C.m.<import:d>",
        "f.<import:.g>",
    ]


def test_import_target_spelling() -> None:
    """TARGETS is ``a.b,c`` for ``import a.b, c`` and the module (dots included) for ``from``."""
    source = "import a.b as x, c\nfrom ...p.q import r as s, t\nfrom . import u\nfrom .. import v\n"
    paths = [s.fq_symbol_path for s in parsed(source).spans[1:]]
    assert paths == ["<import:a.b,c>", "<import:...p.q>", "<import:.>", "<import:..>"]


def test_module_level_assignments_only() -> None:
    """Plain, annotated, augmented, chained and unpacking assignments at module level (also inside
    module-level if/try/with/for/while), never inside def/class, never to attributes or items."""
    source = textwrap.dedent(
        """\
        a = 1
        b: int = 2
        c: str
        __all__ += ["x"]
        d = e = 3
        [f, (g, *h)] = 1, (2, 3)
        if a:
            i = 1
        try:
            j = 1
        finally:
            pass
        with open("x") as fh:
            k = fh
        for m in range(3):
            n = m
        while False:
            o = 1
        obj.p = 1
        q[0] = 1
        r.s, t = 1, 2
        class C:
            u = 1
        def f():
            v = 1
        """
    )
    names = [s.fq_symbol_path for s in parsed(source).spans if s.kind is SpanKind.ASSIGNMENT]
    assert names == ["a", "b", "c", "__all__", "d,e", "f,g,h", "i", "j", "k", "n", "o"]


def test_nested_definitions_have_dotted_paths() -> None:
    """Nested defs are ``outer.inner``, methods ``Class.method``; there is no ``<locals>``."""
    source = "def outer():\n    def inner():\n        class K:\n            def m(self): pass\n"
    assert [s.fq_symbol_path for s in parsed(source).spans[1:]] == [
        "outer",
        "outer.inner",
        "outer.inner.K",
        "outer.inner.K.m",
    ]


@pytest.mark.parametrize("source", [b"", b"\n\n", b"# only a comment\n", b"\xef\xbb\xbf"])
def test_files_without_definitions_have_only_the_module_span(source: bytes) -> None:
    """An empty (or comment-only, or BOM-only) file is understood: one module span, lines 1..n."""
    result = parsed(source)
    assert [(s.kind, s.start_line) for s in result.spans] == [(SpanKind.MODULE, 1)]
    assert result.spans[0].end_line == max(1, source.count(b"\n"))


def test_a_utf8_bom_is_fine() -> None:
    """A UTF-8 byte order mark neither makes a gap nor changes any span id."""
    plain, with_bom = parsed(SAMPLE), parsed(b"\xef\xbb\xbf" + SAMPLE.encode())
    assert shape(with_bom.spans) == shape(plain.spans)
    assert [s.span_id for s in with_bom.spans] == [s.span_id for s in plain.spans]


@pytest.mark.parametrize(
    ("data", "limits", "reason", "line"),
    [
        (b"import os\nx = 1\x00\n", ParseLimits(), GapReason.BINARY, 2),
        (b"x = 1\ny = 'caf\xe9'\n", ParseLimits(), GapReason.NOT_UTF8, 2),
        (b"x = 1\n" * 100, ParseLimits(max_bytes=599), GapReason.TOO_LARGE, None),
        (b"import os\n\ndef f(:\n    pass\n", ParseLimits(), GapReason.SYNTAX_ERROR, 3),
        (b"x = (1,\ny = 2\n", ParseLimits(), GapReason.SYNTAX_ERROR, 1),
        (b"x = 1\n" * 2000, ParseLimits(timeout_s=0.0), GapReason.PARSE_TIMEOUT, None),
    ],
)
def test_every_gap_reason(data: bytes, limits: ParseLimits, reason: str, line: int | None) -> None:
    """Each kind of blob that is not understood yields no spans and one gap with its reason, the
    first offending line where there is one, a short detail, and an empty path."""
    result, gaps = parse_source(data, limits)
    assert result is None
    assert [(g.reason, g.line, g.path) for g in gaps] == [(reason, line, "")]
    assert 0 < len(gaps[0].detail) <= 120


def test_the_parser_works_again_after_a_timeout() -> None:
    """A cancelled parse resets the cached parser; otherwise the next parse resumes it (or spins)."""
    _, gaps = parse_source(b"x = 1\n" * 2000, ParseLimits(timeout_s=0.0))
    assert gaps[0].reason == GapReason.PARSE_TIMEOUT
    assert shape(parsed(SAMPLE).spans) == EXPECTED


def test_node_text_is_right_for_small_and_large_nodes() -> None:
    """Trees are parsed through a read callback (for the time limit) that ``Node.text`` reuses; it
    must give every node's exact bytes, and a multi-megabyte node must neither crash nor crawl."""
    data = SAMPLE.encode() * 1000
    result = parsed(data)
    assert result.root.text == data
    cursor, seen = result.root.walk(), 0
    while seen < 5000:
        node = cursor.node
        assert node is not None
        assert node.text == data[node.start_byte : node.end_byte]
        assert result.text(node).encode() == node.text
        seen += 1
        if not cursor.goto_first_child():
            while not cursor.goto_next_sibling():
                assert cursor.goto_parent()


def test_3000_deep_nesting_does_not_crash() -> None:
    """The walk is iterative: 3,000-deep parentheses, lists, calls and lambdas parse into spans."""
    for source in [
        "x = " + "(" * 3000 + "1" + ")" * 3000,
        "x = " + "[" * 3000 + "]" * 3000,
        "x = " + "f(" * 3000 + ")" * 3000,
        "x = " + "lambda: " * 3000 + "1",
        "x = " + "not " * 3000 + "y",
    ]:
        assert [s.fq_symbol_path for s in parsed(source + "\n").spans] == ["<module>", "x"]
    deep = "".join(" " * i + f"def f{i}():\n" for i in range(200)) + " " * 200 + "pass\n"
    assert parsed(deep).spans[-1].fq_symbol_path == ".".join(f"f{i}" for i in range(200))


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_invalid_input_never_raises(data: bytes) -> None:
    """Whatever the bytes, parse_source returns spans or gaps; it never raises."""
    result, gaps = parse_source(data)
    assert (result is None) == bool(gaps)


def test_innermost_span_and_scope_path() -> None:
    """innermost_span answers "which class/function/module span contains this node"; scope_path
    "in whose body does it run": a decorator or a default value belongs to the enclosing scope."""
    result = parsed(SAMPLE)
    root = result.root
    by_path = {s.fq_symbol_path: i for i, s in enumerate(result.spans)}

    def node_at(needle: str) -> Node:
        start = SAMPLE.encode().index(needle.encode())
        found = root.descendant_for_byte_range(start, start + len(needle))
        assert found is not None
        return found

    assert result.innermost_span(node_at("json.loads")) == by_path["Order.total"]
    assert result.scope_path(node_at("json.loads")) == "Order.total"
    assert result.scope_path(node_at("return raw")) == "Order.fetch.parse"
    assert result.innermost_span(node_at("register")) == by_path["Order"]
    assert result.scope_path(node_at("register")) == ""
    assert result.scope_path(node_at("limit")) == "Order"
    assert result.innermost_span(node_at("limit")) == by_path["Order"]
    assert result.scope_path(node_at("return path")) == "helper.Local.method"
    assert result.innermost_span(node_at("RATE")) == 0
    assert result.scope_path(node_at("RATE")) == ""
    assert result.innermost_span(node_at("import json")) == by_path["Order.total"]

    defaults = parsed("def f(a=g()):\n    return h()\n")
    g_call, h_call = (defaults.root.descendant_for_byte_range(i, i + 3) for i in (8, 25))
    assert g_call is not None
    assert h_call is not None
    assert (defaults.scope_path(g_call), defaults.innermost_span(g_call)) == ("", 1)
    assert (defaults.scope_path(h_call), defaults.innermost_span(h_call)) == ("f", 1)


def test_definitions_agree_with_the_definitions_query() -> None:
    """An independent oracle: the ``definitions.scm`` query finds the same classes, functions and
    imports as the walk, on every identity fixture."""
    for path in sorted(FIXTURES.glob("*.py")):
        result = parsed(path.read_bytes())
        found = ts.captures(ts.query("definitions"), result.root)
        by_query: set[tuple[SpanKind, int]] = {
            (kind, node.start_byte)
            for kind, capture in [
                (SpanKind.CLASS, "name.definition.class"),
                (SpanKind.FUNCTION, "name.definition.function"),
                (SpanKind.IMPORT, "definition.import"),
            ]
            for node in found.get(capture, [])
        }
        by_walk: set[tuple[SpanKind, int]] = set()
        for span, node in zip(result.spans, result.span_nodes, strict=True):
            if span.kind in (SpanKind.CLASS, SpanKind.FUNCTION):
                definition = node.child_by_field_name("definition") or node
                name = definition.child_by_field_name("name")
                assert name is not None
                by_walk.add((span.kind, name.start_byte))
            elif span.kind is SpanKind.IMPORT:
                by_walk.add((span.kind, node.start_byte))
        assert by_walk == by_query, path.name
        assert len(ts.matches(ts.query("definitions"), result.root)) == len(by_query)


def test_spans_are_preorder_with_valid_lines() -> None:
    """On every fixture: module first, then spans in source order, lines 1-based and ordered."""
    for path in sorted(FIXTURES.glob("*.py")):
        result = parsed(path.read_bytes())
        spans, nodes = result.spans, result.span_nodes
        assert (spans[0].kind, spans[0].fq_symbol_path) == (SpanKind.MODULE, "<module>")
        assert [n.start_byte for n in nodes[1:]] == sorted(n.start_byte for n in nodes[1:])
        assert all(1 <= s.start_line <= s.end_line <= spans[0].end_line for s in spans)
        assert len(nodes) == len(spans)
