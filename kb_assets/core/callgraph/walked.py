"""The call-graph query's matches, rebuilt from the nodes the fingerprint walk passes anyway.

``queries/calls.scm`` finds the call-graph collector's nodes in one tree-sitter query. Running it
over Django took 0.53 s of a parse worker's CPU: the query engine steps through every node of the
tree again, more slowly than the fingerprint walk (``fingerprint``) that already visits each one.
That walk now keeps the nodes of the kinds in ``KINDS`` in the order it meets them (document
order), and ``matches`` turns them into the query's (pattern index, captures) pairs: 0.13 s.

What the collector reads is the same: each pattern's structural conditions are checked here as
the query checks them (the field's node and its kind; ``(_)`` is any *named* node), and the
binding patterns (``bindings.FIRST_PATTERN`` on), whose order of handling shows in the facts, come in the
query's order. The query yields a match once its last node is reached, so a ``with ... as x``
whose value holds a lambda yields the lambda's parameters first; ``matches`` sorts those by the
node that completes each. The other categories are complete at their first node (calls,
returns) or are ordered by their consumer (definitions), and stay in walk order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tree_sitter import Node

from kb_assets.core import treesitter as ts

Match = dict[str, list[Node]]

_k = ts.kind_ids
_FUNCTION, _CLASS, _DECORATED, _CALL = (
    _k("function_definition"),
    _k("class_definition"),
    _k("decorated_definition"),
    _k("call"),
)
_ASSIGNMENT, _WALRUS, _AUGMENTED = _k("assignment"), _k("named_expression"), _k("augmented_assignment")
_FOR, _FOR_IN, _LAMBDA = _k("for_statement"), _k("for_in_clause"), _k("lambda")
_EXCEPT, _WITH_ITEM = _k("except_clause"), _k("with_item")
_RETURN, _YIELD, _GLOBAL, _NONLOCAL = (
    _k("return_statement"),
    _k("yield"),
    _k("global_statement"),
    _k("nonlocal_statement"),
)
_IDENTIFIER, _PARAMETERS, _BLOCK, _DECORATOR = (
    _k("identifier"),
    _k("parameters"),
    _k("block"),
    _k("decorator"),
)
_TYPE, _LAMBDA_PARAMETERS = _k("type"), _k("lambda_parameters")
_AS_PATTERN, _AS_TARGET = _k("as_pattern"), _k("as_pattern_target")

KINDS: frozenset[int] = (
    _FUNCTION | _CLASS | _DECORATED | _CALL | _ASSIGNMENT | _WALRUS | _AUGMENTED | _FOR | _FOR_IN
)
KINDS |= _LAMBDA | _EXCEPT | _WITH_ITEM | _RETURN | _YIELD | _GLOBAL | _NONLOCAL
"""The node kinds the fingerprint walk keeps for ``matches``."""

_field = ts.PYTHON.field_id_for_name
_NAME, _PARAMS, _BODY = _field("name") or 0, _field("parameters") or 0, _field("body") or 0
_DEFINITION, _LEFT, _RIGHT = _field("definition") or 0, _field("left") or 0, _field("right") or 0
_TYPE_FIELD, _VALUE, _ALIAS = _field("type") or 0, _field("value") or 0, _field("alias") or 0

Found = list[tuple[int, Match]]
Bindings = list[tuple[tuple[int, int], int, Match]]
"""Binding matches with the place of the node that completes each in the query (``_add``)."""


def matches(nodes: Sequence[Node]) -> Found:
    """The ``calls`` query's matches among ``nodes`` (those of ``KINDS``, in document order), each
    pattern's in the query's order (module docstring)."""
    found: Found = []
    bindings: Bindings = []
    for node in nodes:
        kid = node.kind_id
        if kid in _CALL:
            found.append((3, {"call": [node]}))
        elif kid in _BINDERS:
            _BINDERS[kid](node, bindings)
        else:
            _definition(node, found)
    bindings.sort(key=lambda b: b[0])
    found += [(pattern, match) for _, pattern, match in bindings]
    return found


def _definition(node: Node, found: Found) -> None:
    """Pattern 0, a function with name, parameters and body; 1, a class with name and body; 2, one
    per decorator of a decorated definition."""
    if node.kind_id in _DECORATED:
        definition = node.child_by_field_id(_DEFINITION)
        if definition is not None and definition.is_named:
            found += [
                (2, {"decorator": [child], "decorated": [definition]})
                for child in node.named_children
                if child.kind_id in _DECORATOR
            ]
        return
    name, body = node.child_by_field_id(_NAME), node.child_by_field_id(_BODY)
    if name is None or name.kind_id not in _IDENTIFIER or body is None or body.kind_id not in _BLOCK:
        return
    if node.kind_id in _CLASS:
        found.append((1, {"class": [node], "name": [name], "body": [body]}))
        return
    params = node.child_by_field_id(_PARAMS)
    if params is not None and params.kind_id in _PARAMETERS:
        found.append((0, {"function": [node], "name": [name], "params": [params], "body": [body]}))


def _assignment(node: Node, out: Bindings) -> None:
    """Pattern 6, ``x: T`` (completes at the type), and 4, ``left = right`` (at the value)."""
    left = node.child_by_field_id(_LEFT)
    if left is None or not left.is_named:
        return
    kind = node.child_by_field_id(_TYPE_FIELD)
    if kind is not None and kind.kind_id in _TYPE and left.kind_id in _IDENTIFIER:
        _add(out, kind, 6, {"left": [left], "type": [kind]})
    right = node.child_by_field_id(_RIGHT)
    if right is not None and right.is_named:
        _add(out, right, 4, {"left": [left], "right": [right]})


def _walrus(node: Node, out: Bindings) -> None:
    """Pattern 5: ``name := value``."""
    name, value = node.child_by_field_id(_NAME), node.child_by_field_id(_VALUE)
    if name is not None and name.kind_id in _IDENTIFIER and value is not None and value.is_named:
        _add(out, value, 5, {"left": [name], "right": [value]})


def _shadow(field: int, pattern: int, kinds: frozenset[int] | None) -> Callable[[Node, Bindings], None]:
    """Patterns 7-10: the node's ``field`` child (a named node, of ``kinds`` if given) is shadowed."""

    def binder(node: Node, out: Bindings) -> None:
        child = node.child_by_field_id(field)
        if child is not None and child.is_named and (kinds is None or child.kind_id in kinds):
            _add(out, child, pattern, {"shadow": [child]})

    return binder


def _except(node: Node, out: Bindings) -> None:
    """Pattern 11: ``except ... as name``."""
    for child in node.named_children:
        alias = child.child_by_field_id(_ALIAS) if child.kind_id in _AS_PATTERN else None
        if alias is not None and alias.kind_id in _AS_TARGET:
            _add(out, alias, 11, {"shadow": [alias]})


def _with_item(node: Node, out: Bindings) -> None:
    """Pattern 12: ``with value as alias``."""
    value = node.child_by_field_id(_VALUE)
    if value is None or value.kind_id not in _AS_PATTERN:
        return
    alias = value.child_by_field_id(_ALIAS)
    if alias is not None and alias.kind_id in _AS_TARGET:
        _add(out, alias, 12, {"alias": [alias], "with": [value]})


def _whole(pattern: int, capture: str) -> Callable[[Node, Bindings], None]:
    """Patterns 13-16: the node itself is the match."""

    def binder(node: Node, out: Bindings) -> None:
        _add(out, node, pattern, {capture: [node]})

    return binder


def _add(out: Bindings, last: Node, pattern: int, match: Match) -> None:
    """A binding match whose query run completes at ``last``: walk order is start byte, then
    enclosing before enclosed (the longer node first)."""
    out.append(((last.start_byte, -last.end_byte), pattern, match))


_BINDERS: dict[int, Callable[[Node, Bindings], None]] = {}
for _kinds, _binder in (
    (_ASSIGNMENT, _assignment),
    (_WALRUS, _walrus),
    (_AUGMENTED, _shadow(_LEFT, 7, _IDENTIFIER)),
    (_FOR, _shadow(_LEFT, 8, None)),
    (_FOR_IN, _shadow(_LEFT, 9, None)),
    (_LAMBDA, _shadow(_PARAMS, 10, _LAMBDA_PARAMETERS)),
    (_EXCEPT, _except),
    (_WITH_ITEM, _with_item),
    (_RETURN, _whole(13, "return")),
    (_YIELD, _whole(14, "yield")),
    (_GLOBAL, _whole(15, "global")),
    (_NONLOCAL, _whole(16, "nonlocal")),
):
    _BINDERS.update(dict.fromkeys(_kinds, _binder))
