"""Evaluating names and expression strings in a scope, statically and conservatively.

Names follow Python's rules: the scope's own bindings (parameters, nested definitions, simple
assignments, local imports; a name bound in any other way is unknown), then enclosing *function*
scopes (class bodies are skipped, as in Python), then the module through the symbol table, then
builtins. A name whose bindings disagree is unknown. The first parameter of a method is an instance
of its class (the class itself in a classmethod); an annotated parameter is an instance of its
annotation. Attribute and call steps are ``members.Members``'. Everything is memoized per program
and cycle-safe (a binding that depends on itself is unknown).
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping

from kb_assets.core.callgraph.exprs import segments
from kb_assets.core.callgraph.hierarchy import Hierarchy
from kb_assets.core.callgraph.index import ScopeRef, Scopes
from kb_assets.core.callgraph.members import Members
from kb_assets.core.callgraph.values import Cls, Ext, Fn, Inst, Param, Resolved, Super, either
from kb_assets.core.models import JSON
from kb_assets.core.symbols.facts import absolute_module
from kb_assets.core.symbols.table import SymbolTable

_BUILTINS = frozenset(n for n in dir(builtins) if not n.startswith("_"))
_UNSET = object()


class Evaluator:
    """Name and expression evaluation over one program's call facts and symbol table."""

    def __init__(self, scopes: Scopes, table: SymbolTable) -> None:
        self.scopes, self.table = scopes, table
        self.hierarchy = Hierarchy(scopes, self.expr)
        self.members = Members(self)
        self._memo: dict[tuple[ScopeRef, str], Resolved | None] = {}
        self._active: set[tuple[ScopeRef, str]] = set()

    def expr(self, ref: ScopeRef, expr: str) -> Resolved | None:
        """What the expression string ``expr`` is, evaluated in scope ``ref``."""
        key = (ref, expr)
        found = self._memo.get(key, _UNSET)
        if found is not _UNSET:
            return found  # type: ignore[return-value]
        if key in self._active:
            return None
        self._active.add(key)
        try:
            result = self._expr(ref, expr)
        finally:
            self._active.discard(key)
        self._memo[key] = result
        return result

    def _expr(self, ref: ScopeRef, expr: str) -> Resolved | None:
        parts = segments(expr)
        head, calls = parts[0]
        if head == "super" and calls:
            return self.apply(self._super(ref), [("", calls - 1), *parts[1:]])
        if len(parts) == 1 and calls == 0:
            return self.name(ref, head)
        return self.apply(self.expr(ref, head), [("", calls), *parts[1:]])

    def apply(self, current: Resolved | None, steps: list[tuple[str, int]]) -> Resolved | None:
        """Follow ``(attribute, calls)`` steps from a value (an empty attribute: calls only)."""
        for name, calls in steps:
            if current is not None and name:
                current = self.members.attribute(current, name)
            for _ in range(calls):
                current = self.members.call(current) if current is not None else None
        return current

    def name(self, ref: ScopeRef, name: str) -> Resolved | None:
        """What a bare name means in scope ``ref``."""
        rec = self.scopes.record(ref)
        if rec["k"] == "m" or name in rec.get("glob", ()):
            return self.global_name(self.scopes.module(ref), name)
        if name in rec.get("nonl", ()):
            outer = self.scopes.enclosing_function_or_module(ref)
            return self._outer(outer, name) if outer is not None and outer.index else None
        local = self._local(ref, rec, name)
        if local is not _UNSET:
            return local  # type: ignore[return-value]
        outer = self.scopes.enclosing_function_or_module(ref)
        return self._outer(outer, name) if outer is not None else None

    def _outer(self, outer: ScopeRef, name: str) -> Resolved | None:
        """A name found in an enclosing scope: that scope's span is read too (not the module's)."""
        found = self.name(outer, name)
        return found.through({self.scopes.span(outer)}) if found is not None and outer.index else found

    def _local(self, ref: ScopeRef, rec: Mapping[str, JSON], name: str) -> object:
        """A binding of ``name`` in the scope itself (``_UNSET`` when it binds no such name)."""
        params = [p.lstrip("*") for p in rec.get("params", ())]
        defs, binds, shadow = rec.get("defs", {}), rec.get("binds", {}), rec.get("shadow", ())
        if name in shadow or sum((name in params, name in defs, name in binds)) > 1:
            return None
        if name in params:
            return self._param(ref, rec, params, name)
        if name in defs:
            kind = "closure" if rec["k"] == "f" else "direct"
            return self.members.definition(ScopeRef(ref.path, int(defs[name])), kind)
        if name in binds:
            return self.agree([self.bound(ref, value) for value in binds[name]], "assignment")
        if name in rec.get("ann", {}):
            return self.typed(ref, str(rec["ann"][name]), "annotated")
        return _UNSET

    def _param(self, ref: ScopeRef, rec: Mapping[str, JSON], params: list[str], name: str) -> Resolved | None:
        owner = self.scopes.class_of_method(ref)
        flag = rec.get("flag")
        if owner is not None and params and name == params[0] and flag != "sm":
            cls = self.scopes.defn(owner)
            return Resolved(Cls(cls) if flag == "cm" else Inst(cls), frozenset({"self_method"}))
        annotation = rec.get("ann", {}).get(name)
        if annotation is not None and not str(rec["params"][params.index(name)]).startswith("*"):
            outer = self.scopes.parent(ref) or ScopeRef(ref.path, 0)
            return self.typed(outer, str(annotation), "annotated")
        return Resolved(Param(ref.path, ref.index, name))

    def typed(self, ref: ScopeRef, annotation: str, form: str) -> Resolved | None:
        """An instance of the class an annotation names."""
        found = self.expr(ref, annotation)
        if found is None:
            return None
        if isinstance(found.value, Cls):
            return found.to(Inst(found.value.defn), form)
        if isinstance(found.value, Ext) and not found.value.name.startswith("builtins."):
            return found.to(self.members.external_instance(found.value.name), form)
        return None

    def bound(self, ref: ScopeRef, value: str | None) -> Resolved | None:
        """What one recorded binding (expression, ``import:``, ``from:``, ``with:``) binds."""
        if value is None:
            return None
        if value.startswith("import:"):
            return self.members.module(value[7:], "import")
        if value.startswith("from:"):
            _, written, attr = value.split(":", 2)
            source = self.scopes.files[ref.path]
            base = absolute_module(source.module or "", source.is_package, written)
            return self.members.imported(base, attr) if base else None
        if value.startswith("with:"):
            entered = self.expr(ref, value[5:])
            return entered if entered is not None and not isinstance(entered.value, Inst) else None
        return self.expr(ref, value)

    def global_name(self, module: str, name: str) -> Resolved | None:
        """A module-level name, through the symbol table (builtins when nothing binds it)."""
        symbol = self.table.lookup(module, name)
        if symbol is None:
            bound = self.table.namespaces.get(module).get(name) is not None
            return Resolved(Ext(f"builtins.{name}")) if name in _BUILTINS and not bound else None
        return self.members.symbol(symbol, "import" if symbol.chain else "direct")

    def agree(self, found: list[Resolved | None], form: str) -> Resolved | None:
        """The value of several bindings: their common value, or ``Either`` of them (None when any is
        unknown)."""
        if not found or any(f is None for f in found):
            return None
        value = either([f.value for f in found if f is not None])
        if value is None:
            return None
        forms = frozenset().union(*(f.forms for f in found if f is not None))
        via = frozenset().union(*(f.via for f in found if f is not None))
        return Resolved(value, forms | {form}, via)

    def _super(self, ref: ScopeRef) -> Resolved | None:
        """``super()`` in a method of class C."""
        owner = self.scopes.class_of_method(ref)
        if owner is None:
            return None
        flag = self.scopes.record(ref).get("flag")
        return Resolved(
            Super(self.scopes.defn(owner), instance=flag not in ("cm", "sm")), frozenset({"super"})
        )

    def function_value(self, fn: Fn) -> ScopeRef | None:
        """The scope of a first-party function value."""
        return ScopeRef(fn.defn.path, fn.defn.scope) if fn.defn.scope is not None else None
