"""Evaluating names and expression strings in a scope, statically and conservatively.

Names follow Python's rules: the scope's own bindings (parameters, nested definitions, simple
assignments, local imports; a name bound in any other way is unknown), then enclosing *function*
scopes (class bodies are skipped, as in Python), then the module through the symbol table, then
builtins. A name whose bindings disagree is unknown. The first parameter of a method is an instance
of its class (the class itself in a classmethod); an annotated parameter is an instance of its
annotation. Attribute and call steps are ``members.Members``'. Everything is memoized per program
and cycle-safe (a binding that depends on itself is unknown), and memoized answers do not depend
on the order of evaluation (``guards``). Each memoized answer keeps the files it read
(``reads``), so that a later commit knows which answers a changed file can reach.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence

from kb_assets.core.callgraph.exprs import segments
from kb_assets.core.callgraph.guards import NO_HIT, UNSET, Guards
from kb_assets.core.callgraph.hierarchy import Hierarchy
from kb_assets.core.callgraph.index import (
    ANNOTATED,
    BOUND,
    DEFINED,
    GLOBAL,
    NONLOCAL,
    PARAM,
    ScopeRef,
    Scopes,
)
from kb_assets.core.callgraph.members import Members
from kb_assets.core.callgraph.reads import Reads
from kb_assets.core.callgraph.values import (
    FORM,
    NO_SPANS,
    Cls,
    Ext,
    Fn,
    Inst,
    Param,
    Resolved,
    Super,
    either,
    union_spans,
)
from kb_assets.core.symbols.facts import absolute_module
from kb_assets.core.symbols.model import Symbol
from kb_assets.core.symbols.table import SymbolTable

_BUILTINS = frozenset(n for n in dir(builtins) if not n.startswith("_"))
_UNSET = object()


class Evaluator:
    """Name and expression evaluation over one program's call facts and symbol table."""

    def __init__(self, scopes: Scopes, table: SymbolTable) -> None:
        self.scopes, self.table = scopes, table
        self.reads: Reads = scopes.reads
        self.guards = Guards(scopes.reads)
        self.hierarchy = Hierarchy(scopes, self.expr, self.guards)
        self.members = Members(self)
        self._memo: dict[tuple[ScopeRef, str], object] = {}
        """(scope, expression) -> its ``Resolved`` or None, or its depth (an int) while being
        evaluated (``guards``)."""
        self._deps: dict[tuple[ScopeRef, str], int] = {}
        """What each memoized expression read (``reads``; empty when not recording)."""
        self._globals: dict[tuple[str, str], object] = {}
        self._globals_deps: dict[tuple[str, str], int] = {}
        self._receivers: dict[ScopeRef, object] = {}

    def release(self) -> None:
        """Drop the per-expression memo (one entry per call site; refilled on demand) and the pure
        per-scope caches: the graph keeps its evaluator, and these are most of what it would hold.
        What the remaining memos read is dropped too, and reads are no longer recorded: the graph's
        read sets are taken by then."""
        self._memo.clear()
        self._deps.clear()
        self._globals_deps.clear()
        self._receivers.clear()
        self.scopes.release()
        self.hierarchy.release()
        self.members.release()
        self.reads.stop()

    def close(self) -> None:
        """Break the reference cycles through this evaluator (its members and its hierarchy point
        back at it), so that whoever drops it frees it by reference counting; it is unusable after.
        Explicit, not weak references as in ``Namespaces``: those back-references are read on every
        resolution step, where a weak reference's dereference would cost."""
        self.members.close()
        self.hierarchy.close()

    def expr(self, ref: ScopeRef, expr: str) -> Resolved | None:
        """What the expression string ``expr`` is, evaluated in scope ``ref``.

        The memo doubles as the cycle guard: while a key is being evaluated it maps to its depth,
        and evaluating it again meanwhile answers unknown; an answer that read such an unknown from
        outside itself is not kept (``guards``). One dictionary, not a memo and a set, and the
        guards' bookkeeping (with the read set's) inline: this runs a few hundred thousand times
        per commit."""
        key = (ref, expr)
        memo = self._memo
        found = memo.get(key, _UNSET)
        guards = self.guards
        reads = self.reads
        if found is not _UNSET:
            if type(found) is int:
                guards.low = min(guards.low, found)
                return None
            if self._deps:
                reads.bits |= self._deps.get(key, 0)
            return found  # type: ignore[return-value]
        guards.depth = depth = guards.depth + 1
        saved, guards.low = guards.low, NO_HIT
        before, reads.bits = reads.bits, 0
        memo[key] = depth
        try:
            parts = segments(expr)
            head, calls = parts[0]
            if head == "super" and calls:
                result = self.apply(self._super(ref), calls - 1, parts[1:])
            elif calls == 0 and len(parts) == 1:
                result = self.name(ref, head)
            else:
                result = self.apply(self.expr(ref, head), calls, parts[1:])
        except BaseException:
            del memo[key]
            guards.depth = depth - 1
            guards.low = min(guards.low, saved)
            reads.bits |= before
            raise
        guards.depth = depth - 1
        read = reads.bits
        reads.bits = before | read
        low = guards.low
        if low < depth:  # read an unknown from a question outside it: answered afresh next time
            del memo[key]
            guards.low = min(low, saved)
        else:
            memo[key] = result
            if read:
                self._deps[key] = reads.kept(read)
            guards.low = saved
        return result

    def apply(
        self, current: Resolved | None, calls: int, steps: Sequence[tuple[str, int]]
    ) -> Resolved | None:
        """Call the value ``calls`` times, then follow ``(attribute, calls)`` steps."""
        members = self.members
        for _ in range(calls):
            if current is None:
                return None
            current = members.call(current)
        for name, times in steps:
            if current is None:
                return None
            current = members.attribute(current, name)
            for _ in range(times):
                if current is None:
                    return None
                current = members.call(current)
        return current

    def name(self, ref: ScopeRef, name: str) -> Resolved | None:  # noqa: PLR0911 - one return per binding kind
        """What a bare name means in scope ``ref``."""
        table = self.scopes.names(ref)
        if table is None:
            return self.global_name(self.scopes.module(ref), name)
        entry = table.get(name)
        if entry is None:
            outer = self.scopes.enclosing_function_or_module(ref)
            return self._outer(outer, name) if outer is not None else None
        kind, data = entry
        if kind == GLOBAL:
            return self.global_name(self.scopes.module(ref), name)
        if kind == NONLOCAL:
            outer = self.scopes.enclosing_function_or_module(ref)
            return self._outer(outer, name) if outer is not None and outer.scope else None
        if kind == PARAM:
            return self._param(ref, name, int(data or 0))
        if kind == DEFINED:
            rec = self.scopes.record(ref)
            form = "closure" if rec["k"] == "f" else "direct"
            return self.members.definition(ScopeRef(ref.path, int(data or 0)), form)
        if kind == BOUND:
            values: list[str | None] = data
            return self.agree([self.bound(ref, value) for value in values], "assignment")
        if kind == ANNOTATED:
            return self.typed(ref, str(data), "annotated")
        return None

    def _outer(self, outer: ScopeRef, name: str) -> Resolved | None:
        """A name found in an enclosing scope: that scope's span is read too (not the module's)."""
        found = self.name(outer, name)
        return found.through({self.scopes.span(outer)}) if found is not None and outer.scope else found

    def _param(self, ref: ScopeRef, name: str, position: int) -> Resolved | None:
        if position == 0:
            receiver = self._receiver(ref)
            if receiver is not None:
                return receiver
        rec = self.scopes.record(ref)
        annotation = rec.get("ann", {}).get(name)
        if annotation is not None and not str(rec["params"][position]).startswith("*"):
            outer = self.scopes.parent(ref) or ScopeRef(ref.path, 0)
            return self.typed(outer, str(annotation), "annotated")
        return Resolved(Param(ref.path, ref.scope, name))

    def _receiver(self, ref: ScopeRef) -> Resolved | None:
        """What a method's first parameter is (an instance of its class, the class itself in a
        classmethod; None outside methods and in static methods). Cached per scope: it depends on
        the call facts alone, and ``self`` is read at most call sites of a method."""
        self.reads.mark(ref.path)
        found = self._receivers.get(ref, _UNSET)
        if found is _UNSET:
            owner = self.scopes.class_of_method(ref)
            flag = self.scopes.record(ref).get("flag")
            found = None
            if owner is not None and flag != "sm":
                cls = self.scopes.defn(owner)
                found = Resolved(Cls(cls) if flag == "cm" else Inst(cls), FORM["self_method"])
            self._receivers[ref] = found
        return found  # type: ignore[return-value]

    def typed(self, ref: ScopeRef, annotation: str, form: str) -> Resolved | None:
        """An instance of the class an annotation names."""
        found = self.expr(ref, annotation)
        if found is None:
            return None
        if type(found.value) is Cls:
            return found.to(Inst(found.value.defn), form)
        if type(found.value) is Ext and not found.value.name.startswith("builtins."):
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
            self.reads.mark(ref.path)
            source = self.scopes.files[ref.path]
            base = absolute_module(source.module or "", source.is_package, written)
            return self.members.imported(base, attr) if base else None
        if value.startswith("with:"):
            entered = self.expr(ref, value[5:])
            return entered if entered is not None and type(entered.value) is not Inst else None
        return self.expr(ref, value)

    def global_name(self, module: str, name: str) -> Resolved | None:
        """A module-level name, through the symbol table (builtins when nothing binds it); memoized,
        as every function of a module looks up the same few globals."""
        key = (module, name)
        found = self.guards.recall(self._globals, self._globals_deps, key)
        if found is UNSET:
            found = self.guards.memoized(
                self._globals, self._globals_deps, key, lambda: self._global_name(module, name)
            )
        return found  # type: ignore[return-value]

    def lookup(self, module: str, name: str) -> Symbol | None:
        """``SymbolTable.lookup``, the modules it visited marked as read."""
        symbol, visited = self.table.lookup_visiting(module, name)
        self.reads.mark_modules(visited)
        return symbol

    def _global_name(self, module: str, name: str) -> Resolved | None:
        symbol = self.lookup(module, name)
        if symbol is None:  # the lookup marked ``module``: it visits it first
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
        forms, via = FORM[form], NO_SPANS
        for f in found:
            if f is not None:
                forms |= f.forms
                via = union_spans(via, f.via)
        return Resolved(value, forms, via)

    def _super(self, ref: ScopeRef) -> Resolved | None:
        """``super()`` in a method of class C."""
        owner = self.scopes.class_of_method(ref)
        if owner is None:
            return None
        flag = self.scopes.record(ref).get("flag")
        return Resolved(Super(self.scopes.defn(owner), instance=flag not in ("cm", "sm")), FORM["super"])

    def function_value(self, fn: Fn) -> ScopeRef | None:
        """The scope of a first-party function value."""
        return ScopeRef(fn.defn.path, fn.defn.scope) if fn.defn.scope is not None else None
