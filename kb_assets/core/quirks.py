"""Where tree-sitter-python parses the same code two ways, make both spellings one token stream.

The grammar is resolved by GLR and context, so formatting alone can flip the tree: ``-> A[B]`` is
a ``generic_type`` but ``-> (A[B])`` a ``subscript``; ``A | B | C`` nests left or right;
``(x) = 1`` is a one-element ``tuple_pattern``; ``n := a if c else b`` binds the walrus first;
``a, *b[1:]`` may read ``(*b)[1:]``. Each handler here was found by running black and ruff format
over ~6,000 real files and diffing token streams; each keeps what the code *means*.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tree_sitter import Node

from kb_assets.core import treesitter as ts

if TYPE_CHECKING:
    from kb_assets.core.fingerprint import Walker

_COMMA, _COLON = ts.kind_ids(",", named=False), ts.kind_ids(":", named=False)
_PIPE = ts.kind_ids("|", named=False)
_UNION, _WALRUS = ts.kind_ids("union_type"), ts.kind_ids("named_expression")
_PRIMARY = ts.kind_ids("call", "attribute", "subscript")


def on_tuple_pattern(w: Walker, node: Node) -> bool:
    """``(x) = 1`` comes out as a tuple_pattern without a comma: only a comma makes a tuple."""
    if any(c.kind_id in _COMMA for c in node.children):
        return w.descend(node, w.close)
    return w.transparent()


def on_type(w: Walker, node: Node) -> bool:
    """Keep the outermost ``(type`` (``x: int`` is not ``x = int``); types nested in it are transparent."""
    if w.type_depth:
        return w.transparent()
    w.type_depth += 1
    return w.descend(node, w.exit_type)


def on_union(w: Walker, node: Node) -> bool:
    """In a type, ``A | B | C`` is one flat union, however tree-sitter nested it."""
    if node.kind_id in _UNION or (w.type_depth and _is_pipe(node)):
        if w.in_union():
            return w.transparent()
        return w.enter(b"(union", w.exit_union)
    return w.descend(node, w.close)


def _is_pipe(node: Node) -> bool:
    operator = node.child_by_field_name("operator")
    return operator is not None and operator.kind_id in _PIPE


def on_conditional(w: Walker, node: Node) -> bool:
    """``(n := a if c else b)`` is read as ``(n := a) if c else b``; emit the walrus outside."""
    first = node.named_child(0) if node.named_child_count else None
    if first is None or first.kind_id not in _WALRUS:
        return w.descend(node, w.close)
    name, value = first.child_by_field_name("name"), first.child_by_field_name("value")
    if name is None or value is None:
        return w.descend(node, w.close)
    w.found(first)  # emitted here, never visited: kept all the same
    w.tokens.append(w.opens[first.kind_id])
    w.subwalk(name)
    w.tokens += (b"`:=", w.opens[node.kind_id])
    w.subwalk(value)
    w.cur.goto_first_child()  # onto the walrus, already emitted: the walk goes on with its siblings
    w.frames.append(w.close_twice)
    return False


def on_list_splat(w: Walker, node: Node) -> bool:
    """``a, *b.c[1:]`` may be read ``(*b).c[1:]``: hoist the star over the whole primary."""
    depth, child, parent = 0, node, node.parent
    while parent is not None and parent.kind_id in _PRIMARY and parent.child(0) == child:
        depth, child, parent = depth + 1, parent, parent.parent
    size = len(w.tokens)
    chain = w.tokens[size - depth :]
    if not depth or any(t[:1] != b"(" for t in chain) or any(f is not w.close for f in w.frames[-depth:]):
        return w.descend(node, w.close)
    w.tokens[size - depth :] = [w.opens[node.kind_id], b"`*", *chain]
    w.frames[-depth] = w.close_twice
    if w.cur.goto_first_child():  # onto the star, already emitted
        w.frames.append(None)
    return False


def on_slice(w: Walker, node: Node) -> bool:
    """``a[1:]`` and ``a[:1]`` differ only by where the colon is: keep the shape."""
    shape = b"".join(b":" if c.kind_id in _COLON else b"e" for c in node.children if not c.is_extra)
    return w.descend(node, w.close, b"[" + shape)


def on_subscript(w: Walker, node: Node) -> bool:
    """``x[a,]`` indexes by a 1-tuple, ``x[a]`` does not; other trailing commas are punctuation."""
    one_tuple = (
        node.child_count >= 5
        and len(node.children_by_field_name("subscript")) == 1
        and any(c.kind_id in _COMMA for c in node.children)
    )
    return w.descend(node, w.close, b"`," if one_tuple else None)
