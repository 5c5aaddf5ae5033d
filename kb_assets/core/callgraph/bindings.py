"""Local bindings of function and class scopes: what each name is bound to, as far as text tells.

A name bound by a simple assignment (``h = helper``, ``svc = Service()``), a walrus, a ``with ...
as`` or a local import keeps what it is bound to; a name bound any other way (loop targets,
unpacking, ``except ... as``, lambda parameters, ``x += 1``) is *shadowed*: it is local, and its
value is unknown, so resolution never falls through to a global of the same name. Returns,
``yield``, ``global``/``nonlocal`` and ``self.attr = ...`` in methods are recorded too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kb_assets.core.callgraph.exprs import expr_text, type_text
from kb_assets.core.models import JSON, SpanKind
from kb_assets.core.symbols.import_bindings import import_bindings

if TYPE_CHECKING:
    from tree_sitter import Node

    from kb_assets.core.callgraph.skeleton import Match, Skeleton
    from kb_assets.core.spans import ParsedSource

FIRST_PATTERN = 4
"""Index of the first binding pattern in ``queries/calls.scm``."""


class Bindings:
    """Records binding matches (patterns ``FIRST_PATTERN``.. of the query) into their scopes."""

    def __init__(self, source: ParsedSource, sk: Skeleton) -> None:
        self.src, self.sk = source, sk
        shadow = self.on_shadow
        self.handlers: tuple[Callable[[Match], None], ...] = (
            self.on_assignment,
            self.on_assignment,
            self.on_annotation,
            shadow,
            shadow,
            shadow,
            shadow,
            shadow,
            self.on_with,
            self.on_return,
            self.on_yield,
            self.on_global,
            self.on_nonlocal,
        )

    def handle(self, pattern: int, match: Match) -> None:
        """Dispatch one query match by its pattern index."""
        self.handlers[pattern - FIRST_PATTERN](match)

    def scope(self, node: Node) -> tuple[int, dict[str, JSON]]:
        """The innermost scope whose body holds ``node``."""
        i = self.sk.at(node.start_byte)
        return i, self.sk.scopes[i]

    def on_assignment(self, match: Match) -> None:
        """``x = v`` binds x to v's expression; ``self.a = v`` records an instance attribute."""
        left, right = match["left"][0], match["right"][0]
        i, scope = self.scope(left)
        if i == 0:
            return
        while right.type == "assignment":
            inner = right.child_by_field_name("right")
            if inner is None:
                return
            right = inner
        if left.type == "identifier":
            _add(scope, "binds", self.src.text(left), expr_text(self.src, right))
        elif left.type == "attribute":
            self._instance_attribute(scope, left, expr_text(self.src, right))
        else:
            self._shadow(scope, left)

    def on_annotation(self, match: Match) -> None:
        """``x: T = ...`` / ``x: T`` in a function or class body: x holds a T."""
        left = match["left"][0]
        i, scope = self.scope(left)
        typed = type_text(self.src, match["type"][0]) if i else None
        if typed is not None:
            scope.setdefault("ann", {})[self.src.text(left)] = typed

    def _instance_attribute(self, scope: dict[str, JSON], left: Node, value: str | None) -> None:
        obj, attr = left.child_by_field_name("object"), left.child_by_field_name("attribute")
        params = scope.get("params") or []
        if obj is None or attr is None or not params or scope.get("flag") == "sm":
            return
        if obj.type == "identifier" and self.src.text(obj) == params[0]:
            _add(scope, "sattr", self.src.text(attr), value)

    def on_shadow(self, match: Match) -> None:
        """A name bound to something unknowable (loop targets, lambda parameters, ``x += 1``)."""
        node = match["shadow"][0]
        self._shadow(self.scope(node)[1], node)

    def _shadow(self, scope: dict[str, JSON], node: Node) -> None:
        names = scope.setdefault("shadow", [])
        stack = [node]
        while stack:
            n = stack.pop()
            if n.type == "identifier":
                name = self.src.text(n)
                if name not in names:
                    names.append(name)
            elif n.type not in ("attribute", "subscript"):
                stack.extend(n.named_children)

    def on_with(self, match: Match) -> None:
        """``with f() as x`` binds x to what ``f()`` enters (``with:f()``); anything else shadows."""
        alias, pattern = match["alias"][0], match["with"][0]
        _, scope = self.scope(pattern)
        value = pattern.named_child(0)
        target = alias.named_child(0) if alias.named_child_count == 1 else None
        if target is not None and target.type == "identifier" and value is not None and value.type == "call":
            expr = expr_text(self.src, value)
            if expr is not None:
                _add(scope, "binds", self.src.text(target), f"with:{expr}")
                return
        self._shadow(scope, alias)

    def on_return(self, match: Match) -> None:
        """What a function returns, as an expression string (``""``: nothing or None; null: unknown)."""
        node = match["return"][0]
        _, scope = self.scope(node)
        value = node.named_child(0) if node.named_child_count else None
        text = "" if value is None or value.type == "none" else expr_text(self.src, value)
        returns = scope.setdefault("ret", [])
        if text not in returns:
            returns.append(text)

    def on_yield(self, match: Match) -> None:
        """A generator: calling it returns a generator, not what it returns."""
        self.scope(match["yield"][0])[1]["gen"] = 1

    def on_global(self, match: Match) -> None:
        """Names declared global resolve at module level."""
        self._declared(match["global"][0], "glob")

    def on_nonlocal(self, match: Match) -> None:
        """Names declared nonlocal resolve in the enclosing function."""
        self._declared(match["nonlocal"][0], "nonl")

    def _declared(self, node: Node, key: str) -> None:
        names = self.scope(node)[1].setdefault(key, [])
        names.extend(self.src.text(n) for n in node.named_children if n.type == "identifier")

    def imports(self) -> None:
        """Import statements inside functions and classes bind local names."""
        for ordinal, span in enumerate(self.src.spans):
            if span.kind is not SpanKind.IMPORT or span.fq_symbol_path.startswith("<"):
                continue  # module-level imports are the symbol table's
            node = self.src.span_nodes[ordinal]
            i, scope = self.scope(node)
            if i == 0:
                continue
            for b in import_bindings(self.src, node, ordinal):
                if b["kind"] == "import":
                    _add(scope, "binds", b["name"], f"import:{b['module']}")
                elif b["kind"] == "from":
                    _add(scope, "binds", b["name"], f"from:{b['module']}:{b['attr']}")


def _add(scope: dict[str, JSON], key: str, name: str, value: str | None) -> None:
    values = scope.setdefault(key, {}).setdefault(name, [])
    if value not in values:
        values.append(value)
