"""Module namespaces and ``__all__`` values, as Python builds them: statements in source order.

A namespace maps each top-level name to the statement that bound it last. A star import binds,
at its position, every name its target exposes to ``import *``: the target's ``__all__`` when it
declares a static one, else every name without a leading underscore (imported ones too), as
CPython does. ``__all__`` itself is evaluated from its operations (``collect``/``dunder_all``):
``= [...]`` resets, ``+=``/``.extend``/``.append`` add, ``other.__all__`` contributes the value
of whatever ``other`` names in this module, and a variable contributes its value (``__all__``
itself, another module's ``__all__`` imported under an alias, a list literal); a statement that
cannot be read, or a reference that does not lead to a first-party ``__all__`` or literal, is
recorded as dynamic.

Recursion through star imports and ``__all__`` references is cycle-safe: a module that is still
being built is seen as built so far (see the ``table`` module docstring for why that is
deterministic).
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kb_assets.core.symbols.facts import Binding, ModuleFacts

if TYPE_CHECKING:
    from kb_assets.core.symbols.table import SymbolTable


@dataclass(frozen=True, slots=True)
class Entry:
    """A namespace entry: the binding statement, and for star-imported names the star's target."""

    binding: Binding
    star_target: str | None = None


Built = tuple[dict[str, Entry], dict[str, Binding]]
"""A module's namespace and its own bindings, as ``Namespaces.get`` built them (never changed
afterwards: every reader takes them as mappings)."""


@dataclass(frozen=True, slots=True)
class DeclaredAll:
    """The value of a module's ``__all__``: static names, plus (line, text) of dynamic statements."""

    names: tuple[str, ...]
    dynamic: tuple[tuple[int, str], ...]


class Namespaces:
    """Per-module namespaces and ``__all__`` values of one symbol table, memoized."""

    def __init__(self, table: SymbolTable, inherited: Mapping[str, Built] | None = None) -> None:
        """``inherited``: namespaces another table built that hold for this one too (``Built``)."""
        self._table = weakref.ref(table)
        self.namespace_packages = _namespace_packages(table.program.module_map.paths)
        self._done: dict[str, dict[str, Entry]] = {}
        self._own: dict[str, dict[str, Binding]] = {}
        for module, (namespace, own) in (inherited or {}).items():
            self._done[module], self._own[module] = namespace, own
        self._building: dict[str, dict[str, Entry]] = {}
        self._all: dict[str, DeclaredAll | None] = {}
        self._all_pending: set[str] = set()

    @property
    def table(self) -> SymbolTable:
        """The table these namespaces belong to. Held weakly: the table holds its namespaces, and a
        cycle would keep a past commit's table until a full collection of the cyclic garbage
        collector, which knowbase's processes run rarely (``collector``)."""
        table = self._table()
        if table is None:
            raise ReferenceError("the symbol table of these namespaces is gone")
        return table

    def get(self, module: str) -> Mapping[str, Entry]:
        """The namespace of ``module`` (empty for modules without facts)."""
        done = self._done.get(module)
        if done is not None:
            return done
        partial = self._building.get(module)
        if partial is not None:
            return partial  # an import cycle: what is bound so far
        facts = self.table.facts.get(module)
        if facts is None:
            return {}
        namespace: dict[str, Entry] = {}
        own: dict[str, Binding] = {}
        self._building[module] = namespace
        for b in facts.bindings:
            if b.kind != "star":
                namespace[b.name] = Entry(b)
                own[b.name] = b
                continue
            target = facts.absolute(b.module or "")
            if target is not None and target != module:
                for name in self.star_names(target):
                    namespace[name] = Entry(b, target)
        del self._building[module]
        self._done[module], self._own[module] = namespace, own
        return namespace

    def built(self, module: str) -> Built | None:
        """The namespace and own bindings of ``module`` once built (a later table of the same
        facts inherits them: ``SymbolTable``), else None."""
        namespace = self._done.get(module)
        return None if namespace is None else (namespace, self._own[module])

    def own(self, module: str) -> Mapping[str, Binding]:
        """The module's own (non-star) bindings, last one per name."""
        self.get(module)
        return self._own.get(module, {})

    def star_names(self, target: str) -> list[str]:
        """The names ``from target import *`` binds."""
        declared = self.declared_all(target)
        if declared is not None and (declared.names or not declared.dynamic):
            return list(declared.names)
        return [n for n in list(self.get(target)) if not n.startswith("_")]

    def declared_all(self, module: str) -> DeclaredAll | None:
        """The value of ``module``'s ``__all__`` (None when it never assigns one)."""
        if module in self._all:
            return self._all[module]
        facts = self.table.facts.get(module)
        if facts is None or not facts.all_ops:
            return None
        if module in self._all_pending:
            return DeclaredAll((), ())  # ``__all__`` references form a cycle
        self._all_pending.add(module)
        try:
            value = self._evaluate(facts)
        finally:
            self._all_pending.discard(module)
        self._all[module] = value
        return value

    def _evaluate(self, facts: ModuleFacts) -> DeclaredAll:
        names: dict[str, None] = {}
        dynamic: list[tuple[int, str]] = []
        for op in facts.all_ops:
            if op.get("dynamic"):
                dynamic.append((op["line"], op["text"]))
                if op["op"] == "set":
                    names = {}
                continue
            value: dict[str, None] = {}
            for item in op["items"]:
                found = self._item(facts, item, tuple(names))
                if found is None:
                    dynamic.append((op["line"], str(item.get("ref") or item.get("var"))))
                value.update(dict.fromkeys(found or ()))
            names = value if op["op"] == "set" else names | value
        return DeclaredAll(tuple(names), tuple(dynamic))

    def _item(
        self, facts: ModuleFacts, item: Mapping[str, str], current: tuple[str, ...]
    ) -> tuple[str, ...] | None:
        """The names one ``__all__`` item stands for (None: not statically known)."""
        if "name" in item:
            return (item["name"],)
        if item.get("var") == "__all__":
            return current
        symbol = self.table.resolve(facts.name, item.get("ref") or item.get("var") or "")
        if symbol is None or symbol.is_external or symbol.module is None:
            return None
        if "ref" in item:
            owner = symbol.dotted if symbol.kind == "module" else None
        elif symbol.dotted == f"{symbol.module}.__all__":
            owner = symbol.module  # ``from m import __all__ as m_all``
        else:
            return _string_list((symbol.facts or {}).get("value"))
        value = self.declared_all(owner) if owner is not None else None
        return value.names if value is not None else None


def _string_list(summary: Mapping[str, object] | None) -> tuple[str, ...] | None:
    """The strings of a list/tuple literal value summary (None for anything else)."""
    value = summary.get("value") if summary is not None and summary.get("kind") == "literal" else None
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return None


def _namespace_packages(modules: Mapping[str, str]) -> frozenset[str]:
    """Dotted prefixes of module names that are no module themselves (PEP 420 directories)."""
    prefixes = {name.rsplit(".", i)[0] for name in modules for i in range(1, name.count(".") + 1)}
    return frozenset(prefixes - set(modules))
