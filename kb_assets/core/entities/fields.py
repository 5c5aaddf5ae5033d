"""An entity's fields as its framework collects them: inherited ones included, in the framework's order.

* pydantic v2 (and SQLModel): every annotation of every class in the MRO, walked from ``object``
  down (``get_type_hints`` order: a re-annotated name keeps its first position), minus
  ``ClassVar``, private ``_x`` names, ``model_config`` and ``Final`` names with a value; a
  ``RootModel`` has ``root``. SQLModel keeps ``Relationship()`` attributes only with
  ``table=True`` (they are mapper attributes then, not pydantic fields).
* pydantic v1 (a v1-only root, or a class in the MRO that declares an un-annotated field ``x =
  1``/``x = Field(...)``, or a ``class Config`` and no ``model_config``): the model bases' fields
  (right to left), then own annotated names, then own un-annotated fields; ``__root__`` counts.
* dataclasses (stdlib and pydantic): the fields of every dataclass in the MRO from the far end,
  then own annotations; ``ClassVar``, ``InitVar`` and ``KW_ONLY`` excluded, ``_x`` and
  ``field(init=False)`` included; plain classes in between contribute nothing.
* attrs: own attributes (annotated ones with ``auto_attribs``, which ``define`` detects, else
  ``attr.ib()``/``field()`` ones) after the inherited ones (``collect_by_mro``; ``attr.s`` uses the
  legacy first-wins walk); an overridden attribute moves to the end, as attrs does.
* SQLAlchemy: the mapped parent's fields (inheritance), then own mapper attributes in
  declaration order, then those of mixins and ``__abstract__`` bases in MRO order (where a table's
  columns go); ``Column``, ``mapped_column``, annotation-only ``Mapped[...]``, ``relationship``,
  ``column_property``, ``synonym``, ``composite``, ``deferred`` and ``@declared_attr`` methods count
  (``backrefs`` adds the relationships other classes declare onto this one).
"""

from __future__ import annotations

from kb_assets.core.entities import annotations as ann
from kb_assets.core.entities import frameworks as fw
from kb_assets.core.entities.classify import Classifier, Kind
from kb_assets.core.entities.decls import Decl, Decoration, Reader, literal, own_decls
from kb_assets.core.entities.hierarchy import ClassInfo, Hierarchy, Node

_DATACLASSES = ("dataclass", "pydantic_dataclass")


class Fields:
    """Field lists of the entities of one hierarchy (memoized per class)."""

    def __init__(self, hierarchy: Hierarchy, classifier: Classifier, reader: Reader) -> None:
        self.h, self.kinds, self.reader = hierarchy, classifier, reader
        self._memo: dict[str, list[Decl]] = {}

    def of(self, info: ClassInfo) -> list[Decl]:
        """The fields of an entity, in its framework's order."""
        found = self._memo.get(info.dotted)
        if found is None:
            self._memo[info.dotted] = []  # a cycle (invalid code) sees no fields
            found = self._compute(info, self.kinds.kind(info))
            self._memo[info.dotted] = found
        return found

    def _compute(self, info: ClassInfo, kind: Kind) -> list[Decl]:
        if kind.framework == "sqlalchemy":
            return self._sqlalchemy(info)
        if kind.style == "dataclass":
            return self._dataclass(info)
        if kind.framework == "attrs" and kind.decoration is not None:
            return self._attrs(info, kind.decoration)
        if kind.framework in ("pydantic", "sqlmodel"):
            if kind.style == "model_v1" or self._v1_flavoured(info):
                return self._pydantic_v1(info)
            return self._pydantic_v2(info, table=kind.framework == "sqlmodel" and self.is_table(info))
        return []

    def mro_classes(self, info: ClassInfo) -> list[ClassInfo]:
        """The first-party classes of the MRO, the class itself first."""
        return [n.info for n in self.h.mro(self.h.node(info)) if n.info is not None]

    def is_table(self, info: ClassInfo) -> bool:
        """``class X(SQLModel, table=True)``."""
        keywords = info.facts.record.get("keywords") or {}
        return literal(keywords.get("table")) is True

    # -- pydantic ------------------------------------------------------------------------------
    def _pydantic_v2(self, info: ClassInfo, *, table: bool) -> list[Decl]:
        hints: dict[str, Decl] = {}
        for node in reversed(self.h.mro(self.h.node(info))):
            if node.info is not None:
                hints.update((d.name, d) for d in own_decls(node.info) if d.annotation is not None)
            if node.name is not None and (r := fw.root(node.name)) and r.style == "root_model":
                hints["root"] = Decl("root", None)
        return [d for d in hints.values() if self._pydantic_field(d) and (table or not self._relation(d))]

    def _pydantic_v1(self, info: ClassInfo) -> list[Decl]:
        fields: dict[str, Decl] = {}
        for parent in reversed(self.h.parents(self.h.node(info))):
            if parent.info is not None and self.kinds.kind(parent.info).framework in ("pydantic", "sqlmodel"):
                fields.update((d.name, d) for d in self.of(parent.info))
        decls = own_decls(info)
        fields.update((d.name, d) for d in decls if d.annotation is not None and self._pydantic_field(d))
        fields.update((d.name, d) for d in decls if self._inferred(d))
        return list(fields.values())

    def _pydantic_field(self, d: Decl) -> bool:
        if d.name == "model_config" or (d.name.startswith("_") and d.name != "__root__"):
            return False
        return not ann.is_classvar(d.annotation) and not (ann.is_final(d.annotation) and d.value is not None)

    def _inferred(self, d: Decl) -> bool:
        """A pydantic v1 field without annotation: ``x = 1`` or ``x = Field(...)``."""
        if d.annotation is not None or d.kind != "assign" or d.value is None:
            return False
        if d.name.startswith("_") or d.name == "model_config":
            return False
        callee = self.reader.callee(d)
        return d.value.get("kind") == "literal" or (callee is not None and fw.is_pydantic_field(callee))

    def _v1_flavoured(self, info: ClassInfo) -> bool:
        config = model_config = False
        for cls in self.mro_classes(info):
            for d in own_decls(cls):
                if self._inferred(d):
                    return True
                config = config or (d.name == "Config" and d.kind == "class")
                model_config = model_config or d.name == "model_config"
        return config and not model_config

    def _relation(self, d: Decl) -> bool:
        return d.owner is not None and self.reader.is_relationship(d)

    # -- dataclasses and attrs -------------------------------------------------------------------
    def _dataclass(self, info: ClassInfo) -> list[Decl]:
        fields: dict[str, Decl] = {}
        for cls in reversed(self.mro_classes(info)):
            if cls is info or any(d.kind in _DATACLASSES for d in self.kinds.decorations(cls)):
                fields.update((d.name, d) for d in own_decls(cls) if d.annotation is not None)
        excluded = (ann.is_classvar, ann.is_initvar, ann.is_kw_only_marker)
        return [d for d in fields.values() if not any(test(d.annotation) for test in excluded)]

    def _attrs(self, info: ClassInfo, decoration: Decoration) -> list[Decl]:
        own = self._attrs_own(info, decoration)
        taken = {d.name for d in own}
        by_mro = literal(decoration.kwargs.get("collect_by_mro"))
        inherited: list[Decl] = []
        if by_mro is True or (by_mro is None and decoration.kind == "attrs_define"):
            for cls in reversed(self.mro_classes(info)[1:]):
                inherited.extend(d for d in self._attrs_declared(cls) if d.name not in taken)
            last = {d.name: i for i, d in enumerate(inherited)}
            inherited = [d for i, d in enumerate(inherited) if last[d.name] == i]
        else:
            for cls in self.mro_classes(info)[1:]:
                for d in self.of(cls) if self._attrs_class(cls) else ():
                    if d.name not in taken:
                        taken.add(d.name)
                        inherited.append(d)
        return inherited + own

    def _attrs_class(self, cls: ClassInfo) -> Decoration | None:
        return next((d for d in self.kinds.decorations(cls) if d.kind.startswith("attrs_")), None)

    def _attrs_declared(self, cls: ClassInfo) -> list[Decl]:
        decoration = self._attrs_class(cls)
        return self._attrs_own(cls, decoration) if decoration is not None else []

    def _attrs_own(self, info: ClassInfo, decoration: Decoration) -> list[Decl]:
        decls = [d for d in own_decls(info) if d.kind == "assign"]
        ib = [d for d in decls if (c := self.reader.callee(d)) is not None and fw.is_attrs_field(c)]
        auto = literal(decoration.kwargs.get("auto_attribs"))
        if auto is None:
            auto = decoration.kind == "attrs_dataclass" or (
                decoration.kind == "attrs_define" and all(d.annotation is not None for d in ib)
            )
        if auto:
            return [d for d in decls if d.annotation is not None and not ann.is_classvar(d.annotation)]
        return ib

    # -- SQLAlchemy ------------------------------------------------------------------------------
    def _sqlalchemy(self, info: ClassInfo) -> list[Decl]:
        mro = self.h.mro(self.h.node(info))
        parent = next((n for n in mro[1:] if self._mapped(n)), None)
        shadowed = set(self.h.mro(parent)) if parent is not None else set()
        fields: dict[str, Decl] = {}
        if parent is not None and parent.info is not None:
            fields.update((d.name, d) for d in self.of(parent.info))
        seen = set(fields)
        # ``seen``: names the mapped parent or an earlier class of the MRO binds hide a mixin's
        for node in mro:
            if node.info is None or node in shadowed or (node != mro[0] and self._mapped(node)):
                continue
            decls = own_decls(node.info)
            for d in decls:
                if (node == mro[0] or d.name not in seen) and self.reader.is_sa_attribute(d):
                    fields[d.name] = d
            seen.update(d.name for d in decls)
        return list(fields.values())

    def _mapped(self, node: Node) -> bool:
        if node.info is None:
            return False
        kind = self.kinds.kind(node.info)
        return kind.is_entity and kind.framework == "sqlalchemy"
