"""The normalization rules: what each tree-sitter node kind becomes in the fingerprint stream.

Most kinds are one table entry (``ACTIONS``/``OPENS``, indexed by kind id, so the walk does one
list lookup per node); kinds that need a look at their children have a handler in ``HANDLERS``
(statements and definitions here, literals in ``literals``, parser quirks in ``quirks``).
Changing any rule changes span ids: bump ``NORMALIZATION_VERSION`` in ``ids.py`` with it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from tree_sitter import Node

from kb_assets.core import literals, quirks
from kb_assets.core import treesitter as ts

if TYPE_CHECKING:
    from kb_assets.core.fingerprint import Walker

DROP, NAMED, TEXT, KEEP, TRANSPARENT, SPECIAL = range(6)
CLOSE = literals.CLOSE

_PUNCTUATION = frozenset({"(", ")", "[", "]", "{", "}", ",", ":", ";", ".", "=", "->", "\\"})
_DROPPED = frozenset({"comment", "line_continuation", "string_start", "string_end", "ERROR"})
_TEXT = frozenset({"identifier", "type_conversion"})
_FIXED = frozenset({"ellipsis", "true", "false", "none"})
# Brackets only (argument lists, type parameters); case_pattern wraps one pattern and nests in
# itself for ``case (A | B):``.
_TRANSPARENT = frozenset({"parenthesized_expression", "argument_list", "type_parameter", "case_pattern"})
# One kind, several spellings: implicit/explicit tuples, and type-expression kinds that tree-sitter
# picks or not by context (``-> A[B]`` is a generic_type, ``-> (A[B])`` a subscript).
_ONE_KIND = {
    "expression_list": "tuple",
    "pattern_list": "tuple",
    "tuple_pattern": "tuple",
    "generic_type": "subscript",
    "member_type": "attribute",
    "splat_type": "list_splat",
}

EXPRESSION_STATEMENT = ts.kind_ids("expression_statement")
BLOCK = ts.kind_ids("block")
_ASSIGNMENTS = ts.kind_ids("assignment", "augmented_assignment")


def _on_module(w: Walker, node: Node) -> bool:
    return w.descend(node, w.close) and w.skip_docstring()


def _on_body(w: Walker, node: Node) -> bool:
    """The first block after a def/class header is its body (``Walker.enter_def`` arms this)."""
    w.disarm_body()
    return w.descend(node, w.close) and w.skip_docstring()


def _on_definition(w: Walker, node: Node) -> bool:
    decorated = w.parent_frame() is w.exit_decorated
    if not decorated:
        w.mark(node)
    w.enter_def()
    return w.descend(node, w.exit_def if decorated else w.exit_def_mark)


def _on_marked(w: Walker, node: Node) -> bool:
    w.mark(node)
    return w.descend(node, w.exit_mark)


def _on_decorated(w: Walker, node: Node) -> bool:
    w.mark(node)
    return w.descend(node, w.exit_decorated)


def _on_module_statement(w: Walker, node: Node) -> bool:
    """An expression statement outside any def/class: assignments there may be spans."""
    if node.named_child_count and node.named_child(0).kind_id in _ASSIGNMENTS:
        return _on_marked(w, node)
    return w.descend(node, w.close)


def _on_import_prefix(w: Walker, node: Node) -> bool:
    w.tokens.append(b"." * w.src[node.start_byte : node.end_byte].count(b"."))
    return False


def is_docstring(node: Node, source: bytes) -> bool:
    """A statement that is only a plain string literal (checked on the first one of a body)."""
    if node.kind_id not in EXPRESSION_STATEMENT:
        return False
    kids = [c for c in node.named_children if not c.is_extra]
    return len(kids) == 1 and literals.is_plain_string(kids[0], source)


def _unreachable(w: Walker, node: Node) -> bool:
    raise AssertionError(f"no handler for {node.type}")


_BY_NAME: dict[str, Callable[[Walker, Node], bool]] = {
    "module": _on_module,
    "block": _on_body,
    "function_definition": _on_definition,
    "class_definition": _on_definition,
    "decorated_definition": _on_decorated,
    "import_statement": _on_marked,
    "import_from_statement": _on_marked,
    "future_import_statement": _on_marked,
    "expression_statement": _on_module_statement,
    "import_prefix": _on_import_prefix,
    "integer": literals.on_number,
    "float": literals.on_number,
    "string": literals.on_string,
    "concatenated_string": literals.on_string,
    "interpolation": literals.on_interpolation,
    "format_specifier": literals.on_format_specifier,
    "slice": quirks.on_slice,
    "subscript": quirks.on_subscript,
    "tuple_pattern": quirks.on_tuple_pattern,
    "type": quirks.on_type,
    "union_type": quirks.on_union,
    "binary_operator": quirks.on_union,
    "conditional_expression": quirks.on_conditional,
    "list_splat": quirks.on_list_splat,
}
_ARMED = frozenset({"block"})  # handled only when armed; a plain named node otherwise


def _table() -> tuple[list[int], list[bytes]]:
    count = ts.PYTHON.node_kind_count
    actions, opens = [DROP] * count, [b""] * count
    for kid in range(count):
        name = ts.PYTHON.node_kind_for_id(kid)
        if name is None:
            continue
        if not ts.PYTHON.node_kind_is_named(kid):
            actions[kid] = DROP if name in _PUNCTUATION else KEEP
            opens[kid] = b"`" + name.encode()
            continue
        opens[kid] = b"(" + _ONE_KIND.get(name, name).encode()
        if name in _DROPPED:
            actions[kid] = DROP
        elif name in _TEXT:
            actions[kid] = TEXT
        elif name in _FIXED:
            actions[kid], opens[kid] = KEEP, opens[kid] + CLOSE
        elif name in _TRANSPARENT:
            actions[kid] = TRANSPARENT
        else:
            actions[kid] = SPECIAL if name in _BY_NAME and name not in _ARMED else NAMED
    return actions, opens


ACTIONS, OPENS = _table()
HANDLERS: list[Callable[[Walker, Node], bool]] = [_unreachable] * len(ACTIONS)
for _name, _handler in _BY_NAME.items():
    for _kid in ts.kind_ids(_name):
        HANDLERS[_kid] = _handler
