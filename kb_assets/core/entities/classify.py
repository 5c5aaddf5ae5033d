"""Which first-party classes are entities, of which framework, found through their whole MRO.

In order of precedence:

* ``sqlmodel.SQLModel`` anywhere in the MRO: a ``sqlmodel`` entity, with or without
  ``table=True`` (a class without it is a pydantic-like model; ``table`` says which it is).
* SQLAlchemy declarative: a declarative root in the MRO — ``DeclarativeBase``/
  ``DeclarativeBaseNoMeta``, the object ``declarative_base()``/``registry().generate_base()``/
  Flask-SQLAlchemy's ``db.Model`` returns, or a class decorated ``@as_declarative()`` — or the
  class itself decorated ``@registry.mapped``. Not entities: the declarative base itself (a class
  whose *direct* base is ``DeclarativeBase``, as ``__init_subclass__`` decides, or the
  ``@as_declarative`` class) and classes with ``__abstract__ = True``; every other subclass is
  mapped. ``registry`` identifies the declarative base, for resolving ``relationship("Name")``.
* pydantic: ``BaseModel``, ``BaseSettings`` (v1 and ``pydantic_settings``), ``GenericModel``,
  ``RootModel`` anywhere in the MRO (generic models included).
* decorators on the class itself: ``@pydantic.dataclasses.dataclass`` (framework ``pydantic``),
  ``@dataclass``/``@dataclasses.dataclass(...)`` (``dataclass``), ``@attr.s``/``@attr.attrs``/
  ``@attr.dataclass``/``@attrs.define``/``frozen``/``mutable`` (``attrs``). An undecorated subclass
  of a dataclass is not one (it declares no fields of its own).

Roots are matched on outside names and on first-party dotted paths alike, so that the framework's
own repository works too (its ``pydantic.main.BaseModel`` is a root there, not an entity).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kb_assets.core.entities import frameworks as fw
from kb_assets.core.entities.decls import Decoration, Reader, literal, own_decls
from kb_assets.core.entities.hierarchy import ClassInfo, Hierarchy, Node

Role = Literal["entity", "declarative_base", "abstract", "none"]


@dataclass(frozen=True, slots=True)
class Kind:
    """What a class is to the model frameworks."""

    role: Role
    framework: str | None = None
    style: str | None = None
    registry: str | None = None
    decoration: Decoration | None = None

    @property
    def is_entity(self) -> bool:
        """True for classes the framework treats as models."""
        return self.role == "entity"


NONE = Kind("none")


class Classifier:
    """Classifies every first-party class of one hierarchy (memoized)."""

    def __init__(self, hierarchy: Hierarchy, reader: Reader) -> None:
        self.hierarchy, self.reader = hierarchy, reader
        self._memo: dict[str, Kind] = {}
        self._decorations: dict[str, list[Decoration]] = {}
        self._candidates: dict[str, bool] = {}

    def kind(self, info: ClassInfo) -> Kind:
        """What ``info`` is (see the module docstring)."""
        found = self._memo.get(info.dotted)
        if found is None:
            found = self._classify(info)
            self._memo[info.dotted] = found
        return found

    def decorations(self, info: ClassInfo) -> list[Decoration]:
        """The class's model-making decorators (memoized)."""
        if info.dotted not in self._decorations:
            self._decorations[info.dotted] = self.reader.decorations(info)
        return self._decorations[info.dotted]

    def candidate(self, node: Node) -> bool:
        """Whether a model-making root or decorator appears anywhere in the node's ancestry
        (itself included). False rules a class out without its MRO; most classes of a large
        repository are ruled out this way (memoized)."""
        found = self._candidates.get(node.key)
        if found is None:
            self._candidates[node.key] = False  # a base cycle (invalid code) ends here
            found = (
                (node.name is not None and fw.root(node.name) is not None)
                or (node.info is not None and bool(self.decorations(node.info)))
                or any(self.candidate(p) for p in self.hierarchy.parents(node))
            )
            self._candidates[node.key] = found
        return found

    def _classify(self, info: ClassInfo) -> Kind:
        node = self.hierarchy.node(info)
        if fw.root(info.dotted) is not None or not self.candidate(node):
            return NONE  # the framework's own base class (the repository is the framework), or no model
        mro = self.hierarchy.mro(node)
        roots = [r for r in (fw.root(n.name) for n in mro if n.name is not None) if r is not None]
        if any(r.framework == "sqlmodel" for r in roots):
            return Kind("entity", "sqlmodel", "sqlmodel", registry="sqlmodel")
        sqlalchemy = self._sqlalchemy(info, node, mro)
        if sqlalchemy is not None:
            return sqlalchemy
        pydantic = [r.style for r in roots if r.framework == "pydantic"]
        if pydantic:
            return Kind("entity", "pydantic", "model_v1" if "model_v1" in pydantic else "model")
        return self._decorated(info)

    def _sqlalchemy(self, info: ClassInfo, node: Node, mro: tuple[Node, ...]) -> Kind | None:
        mapped = next((d for d in self.decorations(info) if d.kind == "sa_mapped"), None)
        if mapped is not None:
            return Kind("entity", "sqlalchemy", "sqlalchemy", registry=mapped.key)
        base = next((n for n in mro if self._declarative(n)), None)
        if base is None:
            return None
        if base == node or any(self._declarative_class(p) for p in self.hierarchy.parents(node)):
            return Kind("declarative_base", "sqlalchemy")
        abstract = any(d.name == "__abstract__" and literal(d.value) is True for d in own_decls(info))
        if abstract:
            return Kind("abstract", "sqlalchemy")
        return Kind("entity", "sqlalchemy", "sqlalchemy", registry=base.key)

    def _declarative(self, node: Node) -> bool:
        """A declarative root: a framework root or a class decorated ``@as_declarative``."""
        root = fw.root(node.name) if node.name is not None else None
        if root is not None:
            return root.framework == "sqlalchemy"
        return node.info is not None and any(d.kind == "sa_base" for d in self.decorations(node.info))

    @staticmethod
    def _declarative_class(node: Node) -> bool:
        root = fw.root(node.name) if node.name is not None else None
        return root is not None and root.style == "declarative_class"

    def _decorated(self, info: ClassInfo) -> Kind:
        for decoration in self.decorations(info):
            if decoration.kind == "pydantic_dataclass":
                return Kind("entity", "pydantic", "dataclass", decoration=decoration)
            if decoration.kind == "dataclass":
                return Kind("entity", "dataclass", "dataclass", decoration=decoration)
            if decoration.kind.startswith("attrs_"):
                return Kind("entity", "attrs", "attrs", decoration=decoration)
        return NONE
