"""Class hierarchies across files: every first-party class's bases, resolved, and its MRO.

A base is a ``Node``: a first-party class (``class``), an outside class or object (``external``,
e.g. ``pydantic.BaseModel`` or ``sqlalchemy.orm.declarative_base()``, keyed together with the
first-party assignment that produced it so that two ``declarative_base()`` calls stay two
registries), or something that cannot be resolved (``unknown``, keyed by the module and the text
as written). Builtins (``object``, ``str``) resolve to nothing in the symbol table and become
``builtins.*`` externals. ``declarative_base(cls=Mixin)`` makes ``Mixin`` a parent of the base
object, as SQLAlchemy does (also in the idiom ``Base = declarative_base(cls=Base)``, where the
name still means the class when the call runs).

``mro`` is Python's C3 linearization over these nodes, outside nodes being leaves (their own
ancestry is unknown); when C3 fails (it cannot for code that imports), it falls back to a
depth-first, left-to-right order without repeats.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from kb_assets.core.entities.evaluate import Evaluator, Value
from kb_assets.core.models import JSON
from kb_assets.core.symbols.facts import ClassFacts
from kb_assets.core.symbols.table import SymbolTable


@dataclass(frozen=True, slots=True)
class ClassInfo:
    """A first-party class: where it is and what its body binds."""

    dotted: str
    module: str
    path: str
    facts: ClassFacts = field(compare=False)

    @property
    def span(self) -> int:
        """The class statement's span ordinal in ``path``."""
        return self.facts.span

    @property
    def name(self) -> str:
        """The class's own name (last segment of its qualified name)."""
        return self.facts.qualname.rsplit(".", 1)[-1]


@dataclass(frozen=True, slots=True)
class Node:
    """One entry of a class's MRO (see the module docstring)."""

    key: str
    kind: Literal["class", "external", "unknown"]
    info: ClassInfo | None = field(default=None, compare=False)
    value: Value | None = field(default=None, compare=False)

    @property
    def external(self) -> str | None:
        """The outside expression of an external node."""
        return self.value.external if self.value is not None else None

    @property
    def name(self) -> str | None:
        """The name framework roots are matched on: the outside expression or the class's path."""
        return self.info.dotted if self.info is not None else self.external


class Hierarchy:
    """Bases and MROs of every first-party class of one commit (memoized)."""

    def __init__(self, table: SymbolTable, evaluator: Evaluator) -> None:
        self.table, self.evaluator = table, evaluator
        self.classes: dict[str, ClassInfo] = {}
        for module in sorted(table.facts):
            facts = table.facts[module]
            for qualname, body in facts.classes.items():
                dotted = f"{module}.{qualname}"
                self.classes[dotted] = ClassInfo(dotted, module, facts.source.path, body)
        self._parents: dict[str, tuple[Node, ...]] = {}
        self._mro: dict[str, tuple[Node, ...]] = {}

    def node(self, info: ClassInfo) -> Node:
        """The node of a first-party class."""
        return Node(info.dotted, "class", info)

    def parents(self, node: Node) -> tuple[Node, ...]:
        """The direct bases of a node, resolved (outside nodes: the ``cls=`` of their call, if any)."""
        if node.key not in self._parents:
            self._parents[node.key] = self._resolve_parents(node)
        return self._parents[node.key]

    def mro(self, node: Node) -> tuple[Node, ...]:
        """The node's method resolution order, itself first."""
        found = self._mro.get(node.key)
        if found is None:
            self._mro[node.key] = (node,)  # a base cycle (invalid code) ends here
            parents = self.parents(node)
            found = _c3(node, [self.mro(p) for p in parents], list(parents))
            self._mro[node.key] = found
        return found

    def base(self, module: str, summary: Mapping[str, JSON]) -> Node:
        """The node a base expression written in ``module`` stands for."""
        kind = summary.get("kind")
        dotted = summary.get("dotted") if kind in ("name", "subscript") else summary.get("callee")
        written = str(dotted) if dotted else "<expression>"
        value: Value | None = None
        if kind in ("name", "subscript") and dotted:
            value = self.evaluator.dotted(module, str(dotted))
        elif kind == "call":
            value = self.evaluator.called(module, summary.get("callee"))
        if (
            value is None
            and dotted
            and "." not in written
            and isinstance(getattr(builtins, written, None), type)
        ):
            value = Value(external=f"builtins.{written}")
        return self._node(value, module, written)

    def _node(self, value: Value | None, module: str, written: str) -> Node:
        cls = value.first_party_class if value is not None else None
        if cls is not None and cls.dotted in self.classes:
            return self.node(self.classes[cls.dotted])
        if value is not None and value.external is not None:
            origin = f"@{value.origin.dotted}" if value.origin is not None else ""
            return Node(f"{value.external}{origin}", "external", value=value)
        return Node(f"?{module}:{written}", "unknown", value=value)

    def _resolve_parents(self, node: Node) -> tuple[Node, ...]:
        if node.info is not None:
            bases = node.info.facts.record.get("bases", [])
            return tuple(self.base(node.info.module, b) for b in bases if isinstance(b, Mapping))
        call = node.value.call if node.value is not None else None
        origin = node.value.origin if node.value is not None else None
        mixin = (call.get("kwargs") or {}).get("cls") if call is not None else None
        if not isinstance(mixin, Mapping) or origin is None or origin.module is None:
            return ()
        shadowed = self.classes.get(f"{origin.module}.{mixin.get('dotted')}")
        if shadowed is not None and origin.dotted == shadowed.dotted:
            return (self.node(shadowed),)  # ``Base = declarative_base(cls=Base)``: the class before
        return (self.base(origin.module, mixin),)


def _c3(node: Node, mros: list[tuple[Node, ...]], parents: list[Node]) -> tuple[Node, ...]:
    """C3 merge; a depth-first, left-to-right order without repeats when no linearization exists."""
    seqs = [list(m) for m in mros] + [list(parents)]
    out = [node]
    while True:
        seqs = [s for s in seqs if s]
        if not seqs:
            return tuple(out)
        head = next((s[0] for s in seqs if not any(s[0] in t[1:] for t in seqs)), None)
        if head is None:
            return _dfs(node, mros)
        out.append(head)
        seqs = [s[1:] if s[0] == head else s for s in seqs]


def _dfs(node: Node, mros: list[tuple[Node, ...]]) -> tuple[Node, ...]:
    out = [node]
    for m in mros:
        out.extend(n for n in m if n not in out)
    return tuple(out)
