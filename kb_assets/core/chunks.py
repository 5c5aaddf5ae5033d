"""Source chunks for the RAG baseline: tree-sitter-aware pieces of a file, with no grounding.

The other arm of the A/B against grounded knowledge, so it is deliberately the standard recipe and
frozen (``CHUNKER_VERSION``): every top-level definition (decorators included) is a chunk; the
module-level statements between definitions are grouped into chunks; anything longer than
``MAX_LINES`` is cut at statement boundaries (the first line of a statement directly inside a
block or the module), or, for one statement longer than that, every ``MAX_LINES`` lines. Blank
lines between pieces belong to none. A blob that is not UTF-8 text gives no chunks; one that
cannot be parsed in time is cut every ``MAX_LINES`` lines. Chunks are computed per blob, so a blob
shared by many commits or paths is chunked once.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from tree_sitter import Node

from kb_assets.core import treesitter as ts

CHUNKER_VERSION = "1"
MAX_LINES = 60
DEFINITIONS = frozenset({"function_definition", "class_definition", "decorated_definition"})
_BLOCKS = frozenset({"block", "module"})


@dataclass(frozen=True, slots=True)
class Chunk:
    """Lines ``start_line``..``end_line`` (1-based, inclusive) of a blob and their text."""

    start_line: int
    end_line: int
    content: str


def chunk_id(blob_id: str, start_line: int, end_line: int, model_id: str) -> str:
    """The chunk's content address: chunker version, blob, lines and the embedding model (a stored
    chunk holds one model's vector, so another model's chunk is another row)."""
    key = "\0".join((CHUNKER_VERSION, blob_id, str(start_line), str(end_line), model_id))
    return hashlib.sha256(key.encode()).hexdigest()


def _end_line(node: Node) -> int:
    """The 1-based last line of ``node`` (a node ending right after a newline ends on the line before)."""
    (first, _), (last, column) = node.start_point, node.end_point
    return last if column == 0 and last > first else last + 1


def _boundaries(root: Node) -> set[int]:
    """First lines of every statement that sits directly in a block or the module."""
    rows: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if node.parent is not None and node.parent.type in _BLOCKS and node.is_named:
            rows.add(node.start_point.row + 1)
        stack.extend(node.named_children)
    return rows


def _segments(root: Node) -> list[tuple[int, int]]:
    """Each top-level definition, and each run of other top-level statements, as a line range."""
    segments: list[tuple[int, int]] = []
    run: tuple[int, int] | None = None
    for node in root.named_children:
        start, end = node.start_point.row + 1, _end_line(node)
        if node.type in DEFINITIONS:
            if run is not None:
                segments.append(run)
                run = None
            segments.append((start, end))
        else:
            run = (run[0], end) if run is not None else (start, end)
    if run is not None:
        segments.append(run)
    return segments


def _cut(start: int, end: int, boundaries: set[int], max_lines: int) -> list[tuple[int, int]]:
    """``start..end`` in pieces of at most ``max_lines``, cut at the last boundary that fits."""
    pieces = []
    while end - start + 1 > max_lines:
        limit = start + max_lines
        fits = [b for b in range(limit, start, -1) if b in boundaries]
        cut = fits[0] if fits else limit
        pieces.append((start, cut - 1))
        start = cut
    pieces.append((start, end))
    return pieces


def chunk_lines(source: bytes, max_lines: int = MAX_LINES, timeout_s: float = 10.0) -> list[tuple[int, int]]:
    """The chunks' line ranges of one Python blob, in order (see the module docstring)."""
    if b"\x00" in source:
        return []
    try:
        source.decode("utf-8")
    except UnicodeDecodeError:
        return []
    total = source.count(b"\n") + (0 if source.endswith(b"\n") or not source else 1)
    if total == 0:
        return []
    try:
        root = ts.parse(source, timeout_s).root_node
    except ts.ParseTimeoutError:
        return _cut(1, total, set(), max_lines)
    boundaries = _boundaries(root)
    return [piece for s, e in _segments(root) for piece in _cut(s, min(e, total), boundaries, max_lines)]


def chunk_source(source: bytes, max_lines: int = MAX_LINES) -> list[Chunk]:
    """The chunks of one Python blob with their text (exactly the source lines they cover)."""
    lines = source.decode("utf-8", "replace").split("\n")  # tree-sitter's rows count "\n" only
    return [
        Chunk(start, end, "\n".join(lines[start - 1 : end]))
        for start, end in chunk_lines(source, max_lines)
        if any(line.strip() for line in lines[start - 1 : end])
    ]
