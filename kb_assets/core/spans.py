"""Parse one blob into spans: the module, its classes, functions, imports and module-level assignments.

A span's id is ``span_hasher(LANG, kind, fq_symbol_path)`` fed with the normalized fingerprint of
its subtree (see ``fingerprint``): no path, no offsets, so moving or reformatting a file keeps its
ids. The tree is walked once; each span hashes its slice of that one token stream. A blob that is
not understood yields no spans and a ``Gap`` (never an exception).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from tree_sitter import Node

from kb_assets.core import treesitter as ts
from kb_assets.core.callgraph import walked
from kb_assets.core.fingerprint import TokenStream, tokenize
from kb_assets.core.ids import span_hasher
from kb_assets.core.models import Gap, Span, SpanKind
from kb_assets.core.scopes import ScopeIndex, span_name

LANG = "python"
MODULE_PATH = "<module>"


class GapReason:
    """Why a blob was not understood (plain strings, stored in the ``gap`` table)."""

    BINARY = "binary"
    NOT_UTF8 = "not_utf8"
    TOO_LARGE = "too_large"
    SYNTAX_ERROR = "syntax_error"
    PARSE_TIMEOUT = "parse_timeout"


@dataclass(frozen=True, slots=True)
class ParseLimits:
    """Bounds on what one blob may cost: its size (not parsed above it) and its parse time."""

    max_bytes: int = 5_000_000
    timeout_s: float = 10.0


_DEFAULT_LIMITS = ParseLimits()


@dataclass(frozen=True)
class ParsedSource:
    """A successfully parsed blob: source, tree and its spans (pre-order; ordinal = index), and
    the nodes the call-graph collector looks at, kept by the fingerprint walk (``walked.KINDS``,
    document order; None when that walk could not keep them all)."""

    source: bytes
    root: Node
    spans: tuple[Span, ...]
    span_nodes: tuple[Node, ...]
    walked: list[Node] | None = None

    def text(self, node: Node) -> str:
        """The UTF-8 text of a node (sliced from the source, never via the binding)."""
        return self.source[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def innermost_span(self, node: Node) -> int:
        """Ordinal of the innermost class, function or module span whose range contains ``node``."""
        return self._scopes.innermost_span(node.start_byte, node.end_byte)

    def scope_path(self, node: Node) -> str:
        """Qualified name of the def/class whose *body* holds ``node`` ("" at module level).

        Decorators, default values and base classes run in the enclosing scope, so they belong to
        it; ``innermost_span`` answers the positional question instead.
        """
        return self._scopes.scope_path(node.start_byte, node.end_byte)

    @functools.cached_property
    def _scopes(self) -> ScopeIndex:
        return ScopeIndex.build(self.spans, self.span_nodes, len(self.source))


def parse_source(
    data: bytes, limits: ParseLimits = _DEFAULT_LIMITS
) -> tuple[ParsedSource | None, tuple[Gap, ...]]:
    """Parse one blob; None plus gap(s) when the blob is not understood. Gaps carry path=""."""
    gap = _precheck(data, limits)
    if gap is not None:
        return None, (gap,)
    try:
        tree = ts.parse(data, limits.timeout_s)
    except ts.ParseTimeoutError as exc:
        return None, (Gap("", GapReason.PARSE_TIMEOUT, str(exc)),)
    root = tree.root_node
    if root.has_error:
        return None, (_syntax_gap(root, data),)
    stream = tokenize(root, data, walked.KINDS)
    spans, nodes = _build_spans(root, data, stream)
    return ParsedSource(data, root, spans, nodes, stream.kept), ()


def _precheck(data: bytes, limits: ParseLimits) -> Gap | None:
    if len(data) > limits.max_bytes:
        return Gap("", GapReason.TOO_LARGE, f"{len(data)} bytes, more than the limit of {limits.max_bytes}")
    nul = data.find(b"\x00")
    if nul >= 0:
        return Gap("", GapReason.BINARY, f"NUL byte at offset {nul}", data.count(b"\n", 0, nul) + 1)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        return Gap("", GapReason.NOT_UTF8, f"invalid UTF-8 at offset {exc.start}", line)
    return None


def _syntax_gap(root: Node, data: bytes) -> Gap:
    """A gap naming the first ERROR or MISSING node in document order."""
    cur = root.walk()
    while True:
        node: Node = cur.node  # type: ignore[assignment]  # never None on a live cursor
        if node.is_missing:
            return Gap("", GapReason.SYNTAX_ERROR, f"missing {node.type!r}", node.start_point.row + 1)
        if node.is_error:
            snippet = data[node.start_byte : node.end_byte].split(b"\n", 1)[0][:60]
            detail = f"cannot parse {snippet.decode('utf-8', 'replace')!r}"
            return Gap("", GapReason.SYNTAX_ERROR, detail, node.start_point.row + 1)
        if node.has_error and cur.goto_first_child():
            continue
        while not cur.goto_next_sibling():
            if not cur.goto_parent():
                return Gap("", GapReason.SYNTAX_ERROR, "syntax error", root.start_point.row + 1)


def _build_spans(root: Node, data: bytes, stream: TokenStream) -> tuple[tuple[Span, ...], tuple[Node, ...]]:
    """The module span, then one span per accepted mark, in pre-order."""
    last_line = max(1, data.count(b"\n") + (0 if data.endswith(b"\n") else 1))
    spans = [_span(SpanKind.MODULE, MODULE_PATH, stream.fingerprint(), 1, last_line)]
    nodes = [root]
    scopes: list[tuple[int, str]] = []  # (end byte, fq path) of the enclosing classes/functions
    for node, start, end in stream.marks:
        while scopes and scopes[-1][0] <= node.start_byte:
            scopes.pop()
        named = span_name(node, data, scopes[-1][1] if scopes else "")
        if named is None:
            continue
        kind, fq = named
        if kind is SpanKind.CLASS or kind is SpanKind.FUNCTION:
            scopes.append((node.end_byte, fq))
        first, last = _lines(node)
        spans.append(_span(kind, fq, stream.fingerprint(start, end), first, last))
        nodes.append(node)
    return tuple(spans), tuple(nodes)


def _span(kind: SpanKind, fq: str, fingerprint: bytes, start_line: int, end_line: int) -> Span:
    hasher = span_hasher(LANG, kind, fq)
    hasher.update(fingerprint)
    return Span(hasher.hexdigest(), kind, fq, start_line, end_line)


def _lines(node: Node) -> tuple[int, int]:
    """1-based inclusive lines; a node that ends right after a newline ends on the line before."""
    (first, _), (last, column) = node.start_point, node.end_point
    return first + 1, (last if column == 0 and last > first else last + 1)
