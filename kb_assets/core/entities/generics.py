"""The type arguments of parametrized generic bases that reach a pydantic model's fields.

pydantic substitutes the arguments of ``class ItemPage(Page[Item])`` into the fields ``Page``
declares with its type parameters, so ``ItemPage``'s ``items: list[T]`` is ``list[Item]`` to the
framework and ``Item`` is a reference. An argument counts only when its parameter appears in a
field annotation of the generic class (``T`` used only in a method names nothing a field holds).
A class's parameters are those of its ``Generic[...]`` base, else the bare names in its
parametrized bases in order of first appearance (Python's rule). ``RootModel[X]`` always counts
(its ``root`` field is ``X``). Stdlib and attrs dataclasses do not substitute, and get none.
"""

from __future__ import annotations

from collections.abc import Mapping

from kb_assets.core.entities import annotations as ann
from kb_assets.core.entities import frameworks as fw
from kb_assets.core.entities.annotations import Summary
from kb_assets.core.entities.classify import Kind
from kb_assets.core.entities.fields import Fields
from kb_assets.core.entities.hierarchy import ClassInfo, Hierarchy, Node


class GenericArguments:
    """Type arguments of parametrized bases, per entity (one commit)."""

    def __init__(self, hierarchy: Hierarchy, fields: Fields) -> None:
        self.h, self.fields = hierarchy, fields

    def of(self, kind: Kind, mro: tuple[Node, ...]) -> list[tuple[str, Summary]]:
        """The arguments that reach the fields, each with the module that writes it."""
        if kind.framework not in ("pydantic", "sqlmodel") or kind.style == "dataclass":
            return []
        found: list[tuple[str, Summary]] = []
        for node in mro:
            if node.info is None:
                continue
            for base in _subscripts(node.info):
                items = _index(base)
                target = self.h.base(node.info.module, base)
                if target.info is not None:
                    used = self._used(target.info)
                    parameters = _parameters(target.info)
                    items = [i for p, i in zip(parameters, items, strict=False) if p in used]
                elif not _root_model(target):
                    continue
                found += [(node.info.module, i) for i in items]
        return found

    def _used(self, info: ClassInfo) -> set[str]:
        """Names mentioned in the field annotations of a (generic) class, ``RootModel[...]``'s
        argument included (the ``root`` field's type)."""
        used: set[str] = set()
        for decl in self.fields.of(info):
            used |= ann.names(decl.annotation)
        for base in _subscripts(info):
            target = self.h.base(info.module, base)
            if _root_model(target):
                for item in _index(base):
                    used |= ann.names(item)
        return used


def _subscripts(info: ClassInfo) -> list[Summary]:
    """The class's parametrized bases (``Page[T]``, ``Generic[T]``), as written."""
    bases = info.facts.record.get("bases")
    return [b for b in bases or [] if isinstance(b, Mapping) and b.get("kind") == "subscript"]


def _parameters(info: ClassInfo) -> list[str]:
    """The class's type parameter names, in order."""
    bases = _subscripts(info)
    generic = [b for b in bases if str(b.get("dotted") or "").rsplit(".", 1)[-1] == "Generic"]
    parameters: list[str] = []
    for base in generic or bases:
        for item in _index(base):
            dotted = item.get("dotted") if item.get("kind") == "name" else None
            if isinstance(dotted, str) and "." not in dotted and dotted not in parameters:
                parameters.append(dotted)
    return parameters


def _index(base: Summary) -> list[Summary]:
    """The items of a subscript: ``[Item]`` for ``Page[Item]``."""
    items = base.get("index")
    return [i for i in items if isinstance(i, Mapping)] if isinstance(items, list) else []


def _root_model(node: Node) -> bool:
    """``pydantic.RootModel`` (the base of ``RootModel[X]``)."""
    root = fw.root(node.name) if node.name is not None else None
    return root is not None and root.style == "root_model"
