"""File-local facts for FastAPI routes, cached per blob: what each scope does, nothing resolved.

Only files that can take part in routing are walked, decided by a bytes prefilter. A file that
names a router or ``FastAPI``, includes, mounts or adds routes, or has a route decorator is
walked fully: every scope (the module and each function or method at any depth) contributes
its statements in source order. A file that merely mentions ``app`` or a route (``main.py``
doing ``register_routes(app)``) is walked at module level only. Bodies of tests (``test_*``
functions, ``Test*``/``*Tests``/``*TestCase`` classes) are never walked: they cost much and
serve nothing. The facts::

    {"scopes": [{"qualname": "create_app", "span": 3, "params": ["settings"], "defaults": {"settings": V},
                 "returns": V}, ...],
     "ops": [O...]}

    O = {"op": "assign", "scope": "", "target": "router", "value": V, "span": 2, "line": 4}
        {"op": "for",    "scope": "f", "target": "r", "value": V, "line": 9}
        {"op": "call",   "scope": "f", "callee": "app.include_router", "args": [V], "kwargs": {..}, "line": 7}
        {"op": "route",  "scope": "", "decorator": V(call), "function": "read_item", "span": 5, "line": 5}
        {"op": "return", "scope": "f", "value": V, "line": 12}

``scope`` is the qualified name of the function whose body holds the statement ("" for the
module; a route decorator belongs to the scope that evaluates it, the one holding the ``def``).
``V`` is a ``symbols.values`` summary, extended with ``{"kind": "list", "items": [V]}`` for
list/tuple/set displays, ``{"kind": "fstring", "parts": [V]}`` for f-strings and
``{"kind": "concat", "items": [V]}`` for ``a + b``, so that prefixes built from constants resolve.
Calls recorded are expression statements that route (``app.include_router(...)``) or pass a name
along (``setup(app)``); an assignment whose value is a call is an ``assign``; ``return`` is kept
for names and calls only (what a factory hands back). ``returns`` is a function's return
annotation, when it has one; ``defaults`` the parameters' default values. An op inside an ``if``
without ``else`` (other than ``if TYPE_CHECKING:``) carries ``"cond": true``: it may never run.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from kb_assets.core.extractors.route_summaries import (
    names_something,
    plain_literal,
    summarize_call,
    summarize_value,
)
from kb_assets.core.models import JSON
from kb_assets.core.symbols.values import dotted_name, summarize, unwrap

if TYPE_CHECKING:
    from tree_sitter import Node

    from kb_assets.core.spans import ParsedSource

ROUTE_VERBS = frozenset(
    {"get", "post", "put", "patch", "delete", "head", "options", "trace", "api_route", "websocket"}
)
"""Decorator names that declare a FastAPI route (the last segment of the decorator's callee)."""

_ROUTE_WORDS = (b"Router", b"include_router", b"add_api_route")  # each contains b"oute"
_DECORATOR = re.compile(rb"@[\w.]+\.(?:get|post|put|patch|delete|head|options|trace|api_route|websocket)\(")
_APP = re.compile(rb"app(?!\w)")  # a literal prefix keeps the scan fast; the left boundary is checked apart
_TEST_CLASS = re.compile(r"^Test|Tests?$|TestCase$")
_COMPOUND = frozenset(
    {
        "if_statement",
        "elif_clause",
        "else_clause",
        "try_statement",
        "except_clause",
        "except_group_clause",
        "finally_clause",
        "with_statement",
        "while_statement",
        "match_statement",
        "case_clause",
        "block",
    }
)
_RETURNED = frozenset({"identifier", "attribute", "call"})
_ROUTING_CALLS = frozenset({"include_router", "mount", "add_api_route", "add_api_websocket_route"})


def collect_routes(source: ParsedSource) -> JSON:
    """Scopes and routing-relevant statements of one blob (None when it cannot route anything)."""
    data = source.source
    route = b"oute" in data
    strong = (
        (route and any(word in data for word in _ROUTE_WORDS))
        or b"FastAPI" in data
        or b".mount(" in data
        or _DECORATOR.search(data) is not None
    )
    if not strong and not route and not _mentions_app(data):
        return None
    walk = _Walk(source, module_only=not strong)
    walk.body(source.root, "")
    if not walk.ops:
        return None
    return {"scopes": walk.scopes, "ops": walk.ops}


class _Walk:
    """One pass over module, class and function bodies."""

    def __init__(self, source: ParsedSource, *, module_only: bool) -> None:
        self.src = source
        self.module_only = module_only
        self._ordinals: dict[tuple[int, int], int] | None = None
        self.scopes: list[JSON] = []
        self.ops: list[JSON] = []
        self.conditional = 0
        self.scope_spans: dict[str, int] = {}

    def span(self, node: Node, scope: str = "") -> int:
        """The ordinal of the span marked at ``node``, else of the scope's function (else the module)."""
        if self._ordinals is None:
            self._ordinals = {(n.start_byte, n.end_byte): i for i, n in enumerate(self.src.span_nodes)}
        found = self._ordinals.get((node.start_byte, node.end_byte))
        return found if found is not None else self.scope_spans.get(scope, 0)

    def body(self, container: Node, scope: str, owner: str = "") -> None:
        """Statements of a body, through compound statements (``owner``: the class of a class body)."""
        for child in container.named_children:
            if child.type == "if_statement" and _may_skip(self.src, child):
                self.conditional += 1
                self.body(child, scope, owner)
                self.conditional -= 1
            elif child.type in _COMPOUND:
                self.body(child, scope, owner)
            elif child.type == "for_statement":
                self.for_loop(child, scope, owner)
            elif child.type in ("function_definition", "class_definition", "decorated_definition"):
                self.definition(child, scope, owner)
            elif child.type == "expression_statement" and not owner:
                self.expression(child, scope)
            elif child.type == "return_statement" and scope:
                value = unwrap(child.named_child(0)) if child.named_child_count else None
                if value is not None and value.type in _RETURNED:
                    self.add(
                        {"op": "return", "scope": scope, "value": summarize_value(self.src, value)}, child
                    )

    def for_loop(self, node: Node, scope: str, owner: str) -> None:
        """``for r in routers:`` binds ``r`` to each item; its body is walked in the same scope."""
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if not owner and left is not None and left.type == "identifier" and right is not None:
            self.add(
                {
                    "op": "for",
                    "scope": scope,
                    "target": self.src.text(left),
                    "value": summarize_value(self.src, right),
                },
                node,
            )
        for part in node.named_children:
            if part.type in ("block", "else_clause"):
                self.body(part, scope, owner)

    def definition(self, stmt: Node, scope: str, owner: str) -> None:
        """A function (its decorators, then its body as a new scope) or a class (its body)."""
        node = stmt.child_by_field_name("definition") if stmt.type == "decorated_definition" else stmt
        name_node = node.child_by_field_name("name") if node is not None else None
        body = node.child_by_field_name("body") if node is not None else None
        if node is None or name_node is None or body is None:
            return
        prefix = owner or scope
        name = self.src.text(name_node)
        qualname = f"{prefix}.{name}" if prefix else name
        if self.module_only or name.startswith("test_") or _TEST_CLASS.search(name):
            return  # a weak-hint file's functions, and tests, are not walked (cost; tests build no service)
        if node.type == "class_definition":
            self.body(body, scope, qualname)
            return
        span = self.span(stmt, scope)
        self.scope_spans[qualname] = span
        returns = node.child_by_field_name("return_type")
        record: dict[str, JSON] = {"qualname": qualname, "span": span, "params": _params(self.src, node)}
        defaults = self.defaults(node)
        if defaults:
            record["defaults"] = defaults
        if returns is not None:
            record["returns"] = summarize(self.src, returns)
        self.scopes.append(record)
        if stmt.type == "decorated_definition":
            self.decorators(stmt, scope, qualname, span)
        self.body(body, qualname)

    def defaults(self, node: Node) -> dict[str, JSON]:
        """Default values of a function's parameters, by name."""
        params = node.child_by_field_name("parameters")
        found: dict[str, JSON] = {}
        for p in params.named_children if params is not None else []:
            name, value = p.child_by_field_name("name"), p.child_by_field_name("value")
            if (
                p.type in ("default_parameter", "typed_default_parameter")
                and name is not None
                and value is not None
            ):
                found[self.src.text(name)] = summarize_value(self.src, value)
        return found

    def decorators(self, stmt: Node, scope: str, qualname: str, span: int) -> None:
        """One ``route`` op per decorator that looks like ``@x.get(...)``."""
        for dec in stmt.named_children:
            call = unwrap(dec.named_child(0)) if dec.type == "decorator" and dec.named_child_count else None
            if call is None or call.type != "call":
                continue
            callee = dotted_name(self.src, unwrap(call.child_by_field_name("function")))
            if callee is None or callee.rpartition(".")[2] not in ROUTE_VERBS or "." not in callee:
                continue
            op = {
                "op": "route",
                "scope": scope,
                "decorator": summarize_call(self.src, call),
                "function": qualname,
                "span": span,
            }
            self.add(op, dec)

    def expression(self, stmt: Node, scope: str) -> None:
        """An assignment of one name, or a call statement."""
        expr = unwrap(stmt.named_child(0)) if stmt.named_child_count else None
        if expr is not None and expr.type == "await":
            expr = unwrap(expr.named_child(0)) if expr.named_child_count else None
        if expr is None:
            return
        if expr.type == "assignment":
            left, right = expr.child_by_field_name("left"), expr.child_by_field_name("right")
            target = dotted_name(self.src, left)
            if target is None or right is None or right.type == "assignment":
                return
            if not scope and plain_literal(right):
                return  # module-level literals are in the ``symbols`` facts already
            if target is not None:
                op = {
                    "op": "assign",
                    "scope": scope,
                    "target": target,
                    "value": summarize_value(self.src, right),
                }
                self.add(op | {"span": self.span(stmt, scope)}, stmt)
        elif expr.type == "call":
            call = summarize_call(self.src, expr)
            method = (call["callee"] or "").rpartition(".")[2]
            if method in _ROUTING_CALLS or any(
                names_something(v) for v in [*call["args"], *call["kwargs"].values()]
            ):
                self.add({"op": "call", "scope": scope, **call}, stmt)

    def add(self, op: dict[str, JSON], node: Node) -> None:
        """Record one op with its 1-based line."""
        op["line"] = node.start_point[0] + 1
        if self.conditional:
            op["cond"] = True
        self.ops.append(op)


def _params(source: ParsedSource, node: Node) -> list[str]:
    """Parameter names of a function, in order (``self`` included; ``*``/``**`` ones as written)."""
    params = node.child_by_field_name("parameters")
    names: list[str] = []
    for p in params.named_children if params is not None else []:
        ident = p if p.type == "identifier" else p.child_by_field_name("name")
        if ident is None and p.named_child_count:
            ident = p.named_child(0)
        if ident is not None and ident.type == "identifier":
            names.append(source.text(ident))
    return names


def _mentions_app(data: bytes) -> bool:
    """Whether the word ``app`` occurs in the source."""
    for match in _APP.finditer(data):
        before = data[match.start() - 1 : match.start()]
        if not (before.isalnum() or before == b"_"):
            return True
    return False


def _may_skip(source: ParsedSource, node: Node) -> bool:
    """An ``if`` without ``else`` may run none of its statements (``if TYPE_CHECKING:`` aside)."""
    if any(c.type == "else_clause" for c in node.children):
        return False
    cond = node.child_by_field_name("condition")
    return cond is None or source.text(cond).rsplit(".", 1)[-1].strip() != "TYPE_CHECKING"
