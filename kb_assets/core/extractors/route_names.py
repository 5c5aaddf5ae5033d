"""What a dotted name written in a routing statement is bound to: a value, or a definition.

Resolution follows Python's own order, as far as it can be known statically: the locals of the
enclosing functions (an assignment, a ``for`` target, or a parameter, whose values come from the
function's call sites), ``self.x`` assigned in any method of the same class, the module's own
assignments, then the symbol table (imports, re-exports, definitions). Attribute access goes
through modules and classes (the symbol table's ``member``), instances of first-party classes
(``settings.API_PREFIX`` reads the class-level default), factories (``create_app().router`` reads
what ``create_app`` returns) and ``app.router`` (an app's own router is the app here).

Every answer is a list of targets, because a parameter or a loop variable can be bound to
several values; an empty list means "not known" and callers record a gap.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kb_assets.core.extractors.route_scope import FactsIndex, Op, Place
from kb_assets.core.models import JSON
from kb_assets.core.symbols.model import Symbol
from kb_assets.core.symbols.table import SymbolTable

MAX_DEPTH = 12
"""How many binding steps one resolution may follow (cycles and pathological chains stop here)."""


@dataclass(frozen=True, slots=True)
class Value:
    """An expression a name is bound to, where it is evaluated, and the statement binding it."""

    value: JSON
    place: Place
    key: tuple[str, str, str] | None = None
    span: int | None = None


@dataclass(frozen=True, slots=True)
class Function:
    """A first-party function or method: the handler of a route or the callee of a call."""

    module: str
    qualname: str
    place: Place
    span: int

    @property
    def dotted(self) -> str:
        """``package.module.QualName`` (nested functions as ``outer.inner``)."""
        return f"{self.module}.{self.qualname}"


Target = Value | Symbol


class Names:
    """Name resolution for route facts, over the symbol table."""

    def __init__(self, index: FactsIndex, table: SymbolTable) -> None:
        self.index, self.table = index, table
        self._sites: dict[tuple[str, str], list[tuple[Place, Mapping[str, JSON]]]] | None = None
        self._building = False
        self._active: set[tuple[str, str, str]] = set()
        self._memo: dict[tuple[str, str, str], tuple[Target, ...]] = {}
        self._memo_building: dict[tuple[str, str, str], tuple[Target, ...]] = {}
        """Answers given while call sites are being built (parameters not followed): kept apart."""

    def resolve(self, dotted: str, place: Place, depth: int = 0) -> list[Target]:
        """Every target ``dotted`` may be bound to when evaluated at ``place``.

        A name already being resolved at the same place is a cycle and yields nothing more, and an
        answer is remembered (apart while call sites are being built), so names bound to each other through
        parameters, factories and attributes cannot make the search exponential.
        """
        if depth > MAX_DEPTH or not dotted:
            return []
        key = (dotted, place.source.path, place.scope)
        memo = self._memo_building if self._building else self._memo
        remembered = memo.get(key)
        if remembered is not None:
            return list(remembered)
        if key in self._active:
            return []
        self._active.add(key)
        try:
            found = self._resolve(dotted, place, depth)
        finally:
            self._active.discard(key)
        memo[key] = tuple(found)
        return found

    def _resolve(self, dotted: str, place: Place, depth: int) -> list[Target]:
        first, _, rest = dotted.partition(".")
        if first in ("self", "cls") and rest and place.scope:
            found = self._self(rest, place, depth)
            if found is not None:
                return found
        local = self.index.local(place, first)
        if local is not None:
            scope, ops = local
            targets = self._bound(ops, depth) if ops else self._arguments(place, scope, first, depth)
            return self.attribute(targets, rest, depth)
        op = self.index.module_binding(place.module, first)
        if op is not None:
            return self.attribute(self._bound([op], depth), rest, depth)
        symbol = self.table.resolve(place.module, dotted)
        if symbol is not None:
            return [self.target(symbol)]
        head = self.table.lookup(place.module, first)
        return self.attribute([self.target(head)], rest, depth) if head is not None and rest else []

    def attribute(self, targets: list[Target], rest: str, depth: int) -> list[Target]:
        """``target.rest`` for each target (see the module docstring for what is followed)."""
        if not rest:
            return targets
        seg, _, more = rest.partition(".")
        found: list[Target] = []
        for target in targets:
            if isinstance(target, Symbol):
                member = self.table.member(target, seg)
                found.extend(self.attribute([self.target(member)], more, depth) if member is not None else [])
            else:
                found.extend(self._value_attribute(target, seg, more, depth + 1))
        return found

    def function(self, dotted: str | None, place: Place) -> Function | None:
        """The first-party function ``dotted`` names at ``place`` (None: not one)."""
        if not dotted:
            return None
        if "." not in dotted:
            for scope in [*self.index.enclosing(place), ""]:
                qualname = f"{scope}.{dotted}" if scope else dotted
                if self.index.is_function(place.module, qualname) and scope:
                    return Function(
                        place.module, qualname, place, self.index.scope_span(Place(place.source, qualname))
                    )
        for target in self.resolve(dotted, place):
            if isinstance(target, Symbol) and target.kind == "function" and not target.is_external:
                return self.function_of(target)
        return None

    def function_of(self, symbol: Symbol) -> Function | None:
        """The ``Function`` of a first-party function symbol."""
        module, path = symbol.module or "", symbol.path
        if (
            symbol.dotted is None
            or path is None
            or symbol.span is None
            or path not in self.index.program.files
        ):
            return None
        place = Place(self.index.program.files[path], "")
        return Function(module, symbol.dotted[len(module) + 1 :], place, symbol.span)

    def returned(self, function: Function) -> list[Value]:
        """The values a first-party function returns (its ``return`` statements)."""
        ops = self.index.returns.get((function.module, function.qualname), [])
        return [Value(op.data["value"], op.place) for op in ops]

    def target(self, symbol: Symbol) -> Target:
        """A module-level assignment symbol as its bound ``Value``; any other symbol as itself."""
        if symbol.kind != "attribute" or symbol.is_external or symbol.path is None or symbol.module is None:
            return symbol
        name = (symbol.dotted or "")[len(symbol.module) + 1 :]
        op = self.index.module_binding(symbol.module, name)
        if op is not None:
            return self.bound(op)
        source = self.index.program.files.get(symbol.path)
        facts = symbol.facts or {}
        if source is None or not isinstance(facts.get("value"), dict):
            return symbol
        return Value(facts["value"], Place(source, ""), (symbol.module, "", name), symbol.span)

    def call_sites(self, function: Function) -> list[tuple[Place, Mapping[str, JSON]]]:
        """Every recorded call of ``function`` (built once; parameters are not followed meanwhile)."""
        if self._sites is None:
            sites: dict[tuple[str, str], list[tuple[Place, Mapping[str, JSON]]]] = {}
            self._building = True
            for place, call in self.index.calls():
                callee = self.function(call.get("callee"), place)
                if callee is not None:
                    sites.setdefault((callee.module, callee.qualname), []).append((place, call))
            self._sites, self._building = sites, False
            self._memo_building.clear()
        return self._sites.get((function.module, function.qualname), [])

    # -- steps -----------------------------------------------------------------------------
    def bound(self, op: Op) -> Value:
        """The value an assignment op binds, keyed by the statement."""
        module, scope = op.place.module, op.place.scope
        span = int(op.data["span"]) if not scope and "span" in op.data else self.index.scope_span(op.place)
        return Value(op.data["value"], op.place, (module, scope, str(op.data["target"])), span)

    def _bound(self, ops: list[Op], depth: int) -> list[Target]:
        """Values bound by assignments and ``for`` loops (a loop binds each item of its iterable)."""
        found: list[Target] = []
        for op in ops:
            if op.kind == "assign":
                found.append(self.bound(op))
            else:
                found.extend(self._items(Value(op.data["value"], op.place), depth + 1))
        return found

    def _items(self, value: Value, depth: int) -> list[Target]:
        """The items of an iterable value: a display, or a name bound to one."""
        v = value.value
        if not isinstance(v, dict):
            return []
        if v.get("kind") == "list":
            return [Value(item, value.place) for item in v["items"]]
        if v.get("kind") == "name":
            found: list[Target] = []
            for target in self.resolve(v["dotted"], value.place, depth + 1):
                if isinstance(target, Value):
                    found.extend(self._items(target, depth + 1))
            return found
        return []

    def _arguments(self, place: Place, scope: str, name: str, depth: int) -> list[Target]:
        """What a parameter is bound to: the matching argument at each call site of its function."""
        if self._building:
            return []
        params = self.index.params(place.module, scope)
        function = Function(place.module, scope, Place(place.source, scope), 0)
        position = params.index(name) - (1 if params and params[0] in ("self", "cls") else 0)
        default = self.index.scopes[(place.module, scope)].get("defaults", {}).get(name)
        found: list[Target] = []
        for site, call in self.call_sites(function):
            arg = call["kwargs"].get(name)
            if arg is None and 0 <= position < len(call["args"]):
                arg = call["args"][position]
            if isinstance(arg, dict):
                found.append(Value(arg, site))
            elif isinstance(default, dict):
                found.append(Value(default, Place(place.source, "")))
        if not found and isinstance(default, dict):
            found.append(Value(default, Place(place.source, "")))
        return found

    def _self(self, rest: str, place: Place, depth: int) -> list[Target] | None:
        """``self.x...`` inside a method: ``self.x`` assigned in the class's methods, else a member."""
        facts = self.table.facts.get(place.module)
        cls = self.index.method_class(place, frozenset(facts.classes) if facts is not None else frozenset())
        if cls is None:
            return None
        attr, _, more = rest.partition(".")
        ops = self.index.self_bindings(place.module, cls, f"self.{attr}")
        if ops:
            return self.attribute([self.bound(op) for op in ops], more, depth)
        symbol = self.table.resolve(place.module, f"{cls}.{attr}")
        return self.attribute([self.target(symbol)], more, depth) if symbol is not None else []

    def _value_attribute(self, target: Value, seg: str, more: str, depth: int) -> list[Target]:
        """Attribute ``seg`` of a bound value: through names, factories and instances."""
        v = target.value
        if not isinstance(v, dict):
            return []
        if v.get("kind") == "name":
            return self.resolve(f"{v['dotted']}.{seg}" + (f".{more}" if more else ""), target.place, depth)
        if v.get("kind") != "call" or not v.get("callee"):
            return []
        if seg == "router":  # ``app.router``: an app's router is the app itself here
            return self.attribute([target], more, depth)
        if seg in v.get("kwargs", {}):  # ``router.tags``: a constructor keeps its keyword arguments
            return self.attribute([Value(v["kwargs"][seg], target.place)], more, depth)
        found: list[Target] = []
        for callee in self.resolve(v["callee"], target.place, depth + 1):
            if isinstance(callee, Symbol) and callee.kind == "class" and not callee.is_external:
                member = self.table.member(callee, seg)
                if member is not None:
                    found.extend(self.attribute([self.target(member)], more, depth))
            elif isinstance(callee, Symbol) and callee.kind == "function":
                function = self.function_of(callee)
                returned: list[Target] = list(self.returned(function)) if function is not None else []
                found.extend(self.attribute(returned, f"{seg}.{more}" if more else seg, depth + 1))
        return found
