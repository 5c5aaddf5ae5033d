"""Class hierarchies of first-party classes: bases, C3 method resolution order, member lookup.

Bases are evaluated where Python evaluates them (the class statement's enclosing scope). A base
that is not a first-party class is *opaque*: its members are unknown, so a lookup that reaches it
before finding the name stops there (no edge; precision first) — except for bases known to define
nothing user code calls (``object``, ``typing.Generic``/``Protocol``, ``abc.ABC``), which are
skipped. The order is Python's C3 linearization over first-party classes and opaque leaves; for
an inconsistent hierarchy (which Python itself would reject) it falls back to depth-first,
left-to-right, first occurrence. Instance attributes (``self.x = ...`` in a method) are found
after class-level names, across every first-party class of the order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kb_assets.core.callgraph.guards import UNSET, Guards
from kb_assets.core.callgraph.index import ScopeRef, Scopes
from kb_assets.core.callgraph.values import Cls, Def, Ext, Resolved

TRANSPARENT = frozenset(
    {
        "builtins.object",
        "typing.Generic",
        "typing.Protocol",
        "typing_extensions.Generic",
        "typing_extensions.Protocol",
        "abc.ABC",
    }
)


@dataclass(frozen=True, slots=True)
class Opaque:
    """A base class whose members are unknown (external, or not statically a class)."""

    name: str


Entry = Def | Opaque


@dataclass(frozen=True, slots=True)
class Member:
    """Where a name was found: ``definition`` (a nested def/class), ``values`` (expression strings
    bound to it, each with the scope it is evaluated in) or ``type`` (an annotation, in ``scope``)."""

    owner: Def
    scope: ScopeRef
    definition: ScopeRef | None = None
    values: tuple[tuple[ScopeRef, str | None], ...] = ()
    type: str | None = None


Evaluate = Callable[[ScopeRef, str], Resolved | None]


class Hierarchy:
    """MROs and member lookups, memoized per program."""

    def __init__(self, scopes: Scopes, evaluate: Evaluate, guards: Guards) -> None:
        self.scopes, self.evaluate, self.guards = scopes, evaluate, guards
        self._mro: dict[Def, tuple[Entry, ...]] = {}
        self._active: dict[Def, int] = {}
        """Classes whose order is being computed, with their depth (``guards``)."""
        self._found: dict[tuple[Def, str, Def | None, bool], Member | None] = {}
        self._mro_deps: dict[Def, int] = {}
        self._found_deps: dict[tuple[Def, str, Def | None, bool], int] = {}
        """What each memoized order and lookup read (``guards``, ``reads``)."""
        self._attrs: dict[Def, dict[str, list[tuple[ScopeRef, str | None]]]] = {}

    def close(self) -> None:
        """Let go of the evaluator's ``expr`` (``Evaluator.close``)."""
        del self.evaluate

    def release(self) -> None:
        """Drop the instance-attribute tables: a function of the call facts alone, rebuilt on demand
        (the orders and lookups stay: entry points and process paths ask for them again), and what
        the orders and lookups read (``Evaluator.release``)."""
        self._attrs.clear()
        self._mro_deps.clear()
        self._found_deps.clear()

    def mro(self, cls: Def) -> tuple[Entry, ...]:
        """The class's method resolution order (itself first)."""
        found = self.guards.recall(self._mro, self._mro_deps, cls)
        if found is not UNSET:
            return found  # type: ignore[return-value]
        return self.guards.ask(
            self._mro, self._mro_deps, self._active, cls, compute=lambda: self._order(cls), unknown=(cls,)
        )

    def _order(self, cls: Def) -> tuple[Entry, ...]:
        bases = self.bases(cls)
        order = _c3(cls, [list(self.mro(b)) if isinstance(b, Def) else [b] for b in bases], bases)
        return order or _depth_first(cls, [self.mro(b) if isinstance(b, Def) else (b,) for b in bases])

    def bases(self, cls: Def) -> list[Entry]:
        """The class's bases, first-party classes as ``Def``, anything else opaque."""
        ref = ScopeRef(cls.path, cls.scope) if cls.scope is not None else None
        if ref is None:
            return [Opaque("?")]
        enclosing = self.scopes.parent(ref) or ScopeRef(cls.path, 0)
        out: list[Entry] = []
        for expr in self.scopes.record(ref).get("bases", []):
            resolved = self.evaluate(enclosing, expr) if expr else None
            value = resolved.value if resolved is not None else None
            if type(value) is Cls:
                out.append(value.defn)
            else:
                out.append(Opaque(value.name if type(value) is Ext else "?"))
        return out

    def find(self, cls: Def, name: str, *, after: Def | None = None, instance: bool = True) -> Member | None:
        """Where ``name`` is found on ``cls`` (or, with ``after``, past that class in its order)."""
        key = (cls, name, after, instance)
        found = self.guards.recall(self._found, self._found_deps, key)
        if found is UNSET:
            found = self.guards.memoized(
                self._found, self._found_deps, key, lambda: self._find(cls, name, after, instance)
            )
        return found  # type: ignore[return-value]

    def _find(self, cls: Def, name: str, after: Def | None, instance: bool) -> Member | None:
        order = self.mro(cls)
        start = order.index(after) + 1 if after is not None and after in order else 0
        for entry in order[start:]:
            if isinstance(entry, Opaque):
                if entry.name in TRANSPARENT:
                    continue
                break
            member = self._own(entry, name, instance)
            if member is not None:
                return member
        if not instance:
            return None
        for entry in order[start:]:
            if isinstance(entry, Def):
                values = self._attributes(entry).get(name)
                if values:
                    return Member(entry, ScopeRef(entry.path, entry.scope or 0), values=tuple(values))
        return None

    def consulted(self, cls: Def, owner: Def, after: Def | None = None) -> list[Def]:
        """The first-party classes of ``cls``'s order a lookup read to find ``owner`` (from ``cls``,
        or its ``after`` class, through ``owner``)."""
        order = self.mro(cls)
        first = order.index(after) if after is not None and after in order else 0
        last = order.index(owner) if owner in order else len(order) - 1
        return [e for e in order[first : last + 1] if isinstance(e, Def)]

    def _own(self, cls: Def, name: str, instance: bool) -> Member | None:
        """A name bound in the class body itself."""
        if cls.scope is None:
            return None
        ref = ScopeRef(cls.path, cls.scope)
        rec = self.scopes.record(ref)
        defs, binds = rec.get("defs", {}), rec.get("binds", {})
        if name in defs and name not in binds:
            return Member(cls, ref, definition=ScopeRef(cls.path, int(defs[name])))
        if name in binds and name not in defs:
            return Member(cls, ref, values=tuple((ref, v) for v in binds[name]))
        annotations = rec.get("ann", {})
        if instance and name in annotations and name not in defs:
            return Member(cls, ref, type=str(annotations[name]))
        return None

    def _attributes(self, cls: Def) -> dict[str, list[tuple[ScopeRef, str | None]]]:
        """``self.x = ...`` in the class's own methods: every value of every attribute, by name."""
        self.scopes.reads.mark(cls.path)
        found = self._attrs.get(cls)
        if found is not None:
            return found
        found = {}
        if cls.scope is not None:
            rec = self.scopes.record(ScopeRef(cls.path, cls.scope))
            for index in sorted(rec.get("defs", {}).values()):
                method = ScopeRef(cls.path, int(index))
                for name, values in self.scopes.record(method).get("sattr", {}).items():
                    found.setdefault(name, []).extend((method, v) for v in values)
        self._attrs[cls] = found
        return found


def _c3(cls: Def, orders: list[list[Entry]], bases: list[Entry]) -> tuple[Entry, ...] | None:
    """C3 merge; None when no consistent order exists."""
    seqs = [list(s) for s in orders] + [list(bases)]
    result: list[Entry] = [cls]
    while True:
        seqs = [s for s in seqs if s]
        if not seqs:
            return tuple(result)
        head = next((s[0] for s in seqs if not any(s[0] in t[1:] for t in seqs)), None)
        if head is None:
            return None
        result.append(head)
        for s in seqs:
            if s[0] == head:
                del s[0]


def _depth_first(cls: Def, orders: list[tuple[Entry, ...]]) -> tuple[Entry, ...]:
    """Depth-first, left-to-right, first occurrence kept."""
    seen: dict[Entry, None] = {cls: None}
    for order in orders:
        seen.update(dict.fromkeys(e for e in order if e not in seen))
    return tuple(seen)
