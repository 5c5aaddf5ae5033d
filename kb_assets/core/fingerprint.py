"""Normalize a tree-sitter tree into one flat token stream, in a single iterative walk.

A named node becomes ``(type`` ... ``)``; identifiers and literal *values* are kept; meaningful
anonymous tokens (operators, ``async``, ``not``, ``in``) are kept behind a backquote; punctuation,
comments, line continuations and docstrings are dropped. Formatting-only differences vanish:
quote style and prefix case, redundant parentheses and argument-list brackets, numeric spelling,
implicit vs explicit tuples, trailing commas, implicit string concatenation. The per-kind rules
live in ``normalize`` (and ``literals``, ``quirks``); this module is the walk.

The walk never recurses into the tree (a 3,000-deep expression is fine) and visits each node once.
On the way it records marks (node plus ``[start, end)`` token range) for definitions, imports and
module-level assignment statements; ``spans`` turns marks into spans and hashes each mark's slice.
It also keeps the nodes of the kinds it is asked for (``tokenize(keep=...)``), in document order,
so that a collector needs no second pass over the tree (``callgraph.walked``); keeping them
changes no token.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node, TreeCursor

from kb_assets.core import normalize as rules
from kb_assets.core.normalize import CLOSE, DROP, KEEP, NAMED, SPECIAL, TEXT, TRANSPARENT

KEPT = max(DROP, NAMED, TEXT, KEEP, TRANSPARENT, SPECIAL) + 1
"""The action of a plain named kind whose nodes the walk also keeps (``tokenize(keep=...)``)."""

SEPARATOR = b"\n"
"""Joins tokens into the hashed bytes; only length-prefixed literal tokens may contain it."""

Frame = Callable[[], None] | None
"""What to do when the walk leaves a node: ``None`` (nothing) or a callable."""

_MAX_NESTED_WALKS = 64


@dataclass(frozen=True, slots=True)
class TokenStream:
    """The normalized tokens of one tree and its marks ``(node, start, end)`` in pre-order."""

    tokens: list[bytes]
    marks: list[tuple[Node, int, int]]
    kept: list[Node] | None = None
    """The nodes of the kinds asked for, in document order; None when none were asked for, or when
    some subtree was not walked (absurd nesting, ``Walker.subwalk``): the caller then finds them
    another way."""

    def fingerprint(self, start: int = 0, end: int | None = None) -> bytes:
        """The bytes that identify the token range ``[start, end)`` (one span's subtree)."""
        return SEPARATOR.join(self.tokens[start:end])


def tokenize(root: Node, source: bytes, keep: frozenset[int] = frozenset()) -> TokenStream:
    """Walk ``root`` once and return its normalized token stream and marks, and the nodes whose
    kind id is in ``keep``."""
    walker = Walker(root, source, keep)
    walker.run(root)
    marks = [(node, start, walker.mark_ends[i]) for i, (node, start) in enumerate(walker.marks)]
    kept = walker.kept if keep and walker.complete else None
    return TokenStream(walker.tokens, marks, kept)


class Walker:
    """The state of one walk; the handlers in ``normalize.HANDLERS`` use the helpers below."""

    def __init__(self, root: Node, source: bytes, keep: frozenset[int] = frozenset()) -> None:
        self.src = source
        self.cur: TreeCursor = root.walk()
        self.acts = rules.ACTIONS.copy()  # per walk: a def arms its body block, see enter_def
        self.opens = rules.OPENS
        self.handlers = rules.HANDLERS
        self.keep, self.kept, self.complete = keep, list[Node](), True
        if keep:
            self._keep_kinds(keep)
        self.tokens: list[bytes] = []
        self.marks: list[tuple[Node, int]] = []
        self.mark_ends: list[int] = []
        self.open_marks: list[int] = []
        self.frames: list[Frame] = []
        self.def_depth = self.type_depth = self.nested_walks = 0
        self.close: Frame = self._close
        self.close_twice: Frame = self._close_twice
        self.exit_mark: Frame = self._exit_mark
        self.exit_decorated: Frame = self._exit_decorated
        self.exit_def: Frame = self._exit_def
        self.exit_def_mark: Frame = self._exit_def_mark
        self.exit_type: Frame = self._exit_type
        self.exit_union: Frame = self._exit_union
        self.union_inner: Frame = self._nothing

    def run(self, root: Node) -> None:  # noqa: PLR0912  (one flat loop: a call per node costs ~20%)
        """Emit the tokens of ``root``'s subtree. This loop is the hot path of the whole indexer."""
        cur = self.cur = root.walk()
        acts, opens, handlers, src, close = self.acts, self.opens, self.handlers, self.src, self.close
        emit, push, pop, kept = self.tokens.append, self.frames.append, self.frames.pop, self.kept.append
        while True:
            node: Node = cur.node  # type: ignore[assignment]  # never None on a live cursor
            kid = node.kind_id
            act = acts[kid]
            if act == DROP:
                pass
            elif act == NAMED:
                emit(opens[kid])
                if cur.goto_first_child():
                    push(close)
                    continue
                emit(CLOSE)
            elif act == TEXT:
                emit(src[node.start_byte : node.end_byte])
            elif act == KEEP:
                emit(opens[kid])
            elif act == TRANSPARENT:
                if cur.goto_first_child():
                    push(None)
                    continue
            elif act == KEPT:  # NAMED's tokens, and the node kept: apart, so NAMED pays no test
                kept(node)
                emit(opens[kid])
                if cur.goto_first_child():
                    push(close)
                    continue
                emit(CLOSE)
            elif handlers[kid](self, node):
                continue
            while not cur.goto_next_sibling():
                if not cur.goto_parent():
                    return
                frame = pop()
                if frame is close:
                    emit(CLOSE)
                elif frame is not None:
                    frame()

    def _keep_kinds(self, keep: frozenset[int]) -> None:
        """Plain named kinds to keep get ``KEPT``; kinds with a handler keep through a wrapper."""
        handlers = list(self.handlers)
        for kid in keep:
            if kid in rules.BLOCK or kid in rules.EXPRESSION_STATEMENT:
                raise ValueError(f"the walk re-arms kind {kid}: it cannot keep its nodes")
            if self.acts[kid] == NAMED:
                self.acts[kid] = KEPT
            elif self.acts[kid] == SPECIAL:
                handlers[kid] = functools.partial(_keeping, handlers[kid])
            else:
                raise ValueError(f"kind {kid} is not a named node the walk enters")
        self.handlers = handlers

    def found(self, node: Node) -> None:
        """Keep ``node`` if its kind is kept: for a handler that emits a node without visiting it."""
        if node.kind_id in self.keep:
            self.kept.append(node)

    # -- frames: run when the walk leaves the node that pushed them --------------------------
    def _close(self) -> None:
        self.tokens.append(CLOSE)

    def _close_twice(self) -> None:
        self.tokens += (CLOSE, CLOSE)

    def _exit_mark(self) -> None:
        self.tokens.append(CLOSE)
        self.mark_ends[self.open_marks.pop()] = len(self.tokens)

    def _exit_decorated(self) -> None:
        self._exit_mark()

    def _exit_def(self) -> None:
        self.tokens.append(CLOSE)
        self.def_depth -= 1
        if not self.def_depth:
            for kid in rules.EXPRESSION_STATEMENT:
                self.acts[kid] = SPECIAL

    def _exit_def_mark(self) -> None:
        self._exit_def()
        self.mark_ends[self.open_marks.pop()] = len(self.tokens)

    def _exit_type(self) -> None:
        self.tokens.append(CLOSE)
        self.type_depth -= 1

    def _exit_union(self) -> None:
        self.tokens.append(CLOSE)

    def _nothing(self) -> None:
        pass

    # -- helpers for the handlers -------------------------------------------------------------
    def descend(self, node: Node, frame: Frame, extra: bytes | None = None) -> bool:
        """Emit ``(type`` (and ``extra``), step into the children; ``frame`` runs on leaving."""
        return self.enter(self.opens[node.kind_id], frame, extra)

    def enter(self, opener: bytes, frame: Frame, extra: bytes | None = None) -> bool:
        """Emit ``opener`` (and ``extra``), step into the children; ``frame`` runs on leaving."""
        self.tokens.append(opener)
        if extra is not None:
            self.tokens.append(extra)
        if self.cur.goto_first_child():
            self.frames.append(frame)
            return True
        if frame is not None:
            frame()
        return False

    def transparent(self) -> bool:
        """Step into the children without a marker (a type union stays visible through it)."""
        if self.cur.goto_first_child():
            self.frames.append(self.union_inner if self.in_union() else None)
            return True
        return False

    def in_union(self) -> bool:
        """Whether the node being entered is a direct operand of a flattened type union."""
        frame = self.parent_frame()
        return frame is self.exit_union or frame is self.union_inner

    def parent_frame(self) -> Frame:
        """The frame of the node whose child is being entered (``None`` at the root)."""
        return self.frames[-1] if self.frames else None

    def mark(self, node: Node) -> None:
        """Open a mark at ``node``; the frame that leaves the node records its end."""
        self.open_marks.append(len(self.marks))
        self.marks.append((node, len(self.tokens)))
        self.mark_ends.append(len(self.tokens))

    def enter_def(self) -> None:
        """Inside a def/class: its body block gets the docstring rule, statements stop being marks."""
        self.def_depth += 1
        for kid in rules.BLOCK:
            self.acts[kid] = SPECIAL
        if self.def_depth == 1:
            for kid in rules.EXPRESSION_STATEMENT:
                self.acts[kid] = NAMED

    def disarm_body(self) -> None:
        """The body block was reached: later blocks (if/for/with bodies) are plain nodes again."""
        for kid in rules.BLOCK:
            self.acts[kid] = NAMED

    def skip_docstring(self) -> bool:
        """On a body's first child: step past comments and a docstring; False if none is left."""
        cur = self.cur
        node: Node = cur.node  # type: ignore[assignment]  # never None on a live cursor
        while node.is_extra:
            if not cur.goto_next_sibling():
                return False
            node = cur.node  # type: ignore[assignment]
        if rules.is_docstring(node, self.src):
            return cur.goto_next_sibling()
        return True

    def subwalk(self, node: Node) -> None:
        """Walk a subtree out of order (f-string field, misparsed walrus) with its own cursor."""
        outer = self.cur
        self.nested_walks += 1
        try:
            if self.nested_walks > _MAX_NESTED_WALKS:  # absurd nesting: keep the text, no recursion
                self.tokens.append(b"`" + self.src[node.start_byte : node.end_byte])
                self.complete = False
            else:
                self.run(node)
        finally:
            self.nested_walks -= 1
            self.cur = outer


def _keeping(handler: Callable[[Walker, Node], bool], walker: Walker, node: Node) -> bool:
    """A kind's handler that also keeps its node (``Walker._keep_kinds``)."""
    walker.kept.append(node)
    return handler(walker, node)
