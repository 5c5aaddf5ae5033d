"""The one shim over py-tree-sitter 0.26 and tree-sitter-python 0.25.

Every other module goes through here, so a change of the binding's API (0.26 removed
``Query.captures`` and ``Language.query``; queries now run through a ``QueryCursor``) is absorbed
in one place. Parsers are cached per thread of a process (a ``Parser`` is not thread-safe), query
files under ``kb_assets/core/queries/`` are compiled once.

Time limit: ``Parser.parse`` accepts ``progress_callback`` only together with a read callback
(with a plain ``bytes`` source the binding ignores it and warns). Returning ``True`` from the
callback cancels the parse, which then raises ``ValueError``; the parser must be ``reset()``
afterwards, or the next parse resumes the cancelled one and can spin forever. The tree keeps the
read callback and ``Node.text`` calls it (copying and scanning each chunk it returns), so after the
parse it hands out small chunks that double on consecutive reads; it must return ``bytes`` (a
``memoryview`` crashes ``Node.text``).
``ParsedSource.text`` slices the source instead and is faster still.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from importlib import resources

import tree_sitter_python
from tree_sitter import Language, Node, Parser, Point, Query, QueryCursor, Tree

from kb_assets.core.errors import KbError

PYTHON: Language = Language(tree_sitter_python.language())
"""The tree-sitter grammar of Python (tree-sitter-python 0.25)."""

_PARSE_CHUNK, _TEXT_CHUNK, _MAX_CHUNK = 1 << 16, 256, 1 << 16  # larger chunks crash Node.text
_local = threading.local()


class ParseTimeoutError(KbError):
    """A parse ran past its time limit (``spans`` records it as a ``parse_timeout`` gap)."""

    def __init__(self, timeout_s: float) -> None:
        super().__init__(f"parsing took longer than {timeout_s:g}s")
        self.timeout_s = timeout_s


def parser() -> Parser:
    """Return this thread's Python parser, created once (a forked child makes its own)."""
    cached: tuple[int, Parser] | None = getattr(_local, "parser", None)
    if cached is None or cached[0] != os.getpid():
        cached = (os.getpid(), Parser(PYTHON))
        _local.parser = cached
    return cached[1]


def parse(source: bytes, timeout_s: float | None = None) -> Tree:
    """Parse Python source, giving up after ``timeout_s`` seconds (``ParseTimeoutError``)."""
    p = parser()
    if timeout_s is None:
        return p.parse(source)
    deadline = time.monotonic() + timeout_s
    chunk, last_end, last_size = _PARSE_CHUNK, -1, 0

    def read(offset: int, _point: Point) -> bytes:
        nonlocal last_end, last_size
        size = min(2 * last_size, _MAX_CHUNK) if offset == last_end else chunk
        data = source[offset : offset + size]
        last_end, last_size = offset + len(data), size
        return data

    def progress(_offset: int, _has_error: bool) -> bool:
        return time.monotonic() >= deadline

    try:
        tree = p.parse(read, progress_callback=progress)
    except ValueError as exc:
        p.reset()
        raise ParseTimeoutError(timeout_s) from exc
    chunk = _TEXT_CHUNK  # the tree keeps ``read`` for Node.text: small first chunks, doubling
    return tree


@functools.cache
def query(name: str) -> Query:
    """Compile ``kb_assets/core/queries/<name>.scm`` once per process."""
    text = resources.files("kb_assets.core").joinpath("queries", f"{name}.scm").read_text("utf-8")
    return Query(PYTHON, text)


def captures(q: Query, node: Node) -> dict[str, list[Node]]:
    """Run a query under ``node`` and group the captured nodes by capture name."""
    return QueryCursor(q).captures(node)


def matches(q: Query, node: Node) -> list[tuple[int, dict[str, list[Node]]]]:
    """Run a query under ``node`` and return each match as (pattern index, captures)."""
    return QueryCursor(q).matches(node)


def kind_ids(*names: str, named: bool = True) -> frozenset[int]:
    """Return every kind id (aliases included) whose node type is one of ``names``."""
    return frozenset(
        i
        for i in range(PYTHON.node_kind_count)
        if PYTHON.node_kind_for_id(i) in names and PYTHON.node_kind_is_named(i) == named
    )
