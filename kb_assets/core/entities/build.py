"""Turning classified classes into ``entity`` drafts and gaps for one commit.

Payload (location-free): ``name``, ``framework``, ``fields``, ``references`` (CONTRACT), plus
``bases`` (each direct base as resolved: a first-party dotted path, an outside name such as
``pydantic.BaseModel`` or ``sqlalchemy.orm.declarative_base()``, or the text as written when it
cannot be resolved), ``decorator`` (the outside name of the decorator that made a dataclass,
pydantic dataclass or attrs class), ``table`` (SQLAlchemy and SQLModel: the ``__tablename__``
literal found first in the MRO, SQLModel's lower-cased class name for ``table=True``, else null)
and ``gap`` when the fields may be incomplete: ``unresolved_base`` (a base in the MRO resolves to
nothing), ``external_base`` (an outside class that is no framework root and not neutral may add
fields), ``dynamic_fields`` (attrs ``these=``, SQLAlchemy ``__table__ = Table(...)``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kb_assets.core.entities import annotations as ann
from kb_assets.core.entities import frameworks as fw
from kb_assets.core.entities.backrefs import collect_backrefs
from kb_assets.core.entities.classify import Classifier, Kind
from kb_assets.core.entities.decls import Decl, Reader, literal, own_decls
from kb_assets.core.entities.evaluate import Evaluator
from kb_assets.core.entities.fields import Fields
from kb_assets.core.entities.generics import GenericArguments
from kb_assets.core.entities.hierarchy import ClassInfo, Hierarchy, Node
from kb_assets.core.entities.references import References
from kb_assets.core.extractors.base import Draft
from kb_assets.core.models import JSON, Gap, Grounding
from kb_assets.core.program import Program
from kb_assets.core.symbols.table import symbol_table

SOURCE = "entities"
MODEL_NAME = re.compile(r"(Model|Schema|Base|Entity|Document|Table|Settings|Record)$")
FIELD_MAKERS = fw.SA_PROPERTIES | fw.ATTRS_FIELDS | {"Field", "Relationship"}


@dataclass(frozen=True, slots=True)
class Entity:
    """One entity being described."""

    info: ClassInfo
    kind: Kind


class EntityBuilder:
    """Everything the entities of one commit need, built once."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self.evaluator = Evaluator(symbol_table(program))
        self.hierarchy = Hierarchy(self.evaluator.table, self.evaluator)
        self.reader = Reader(self.evaluator)
        self.classifier = Classifier(self.hierarchy, self.reader)
        self.fields = Fields(self.hierarchy, self.classifier, self.reader)
        self.references = References(self.evaluator, self.classifier, self.reader)
        self.generics = GenericArguments(self.hierarchy, self.fields)
        self.backrefs: dict[str, list[Decl]] = {}

    def build(self) -> tuple[list[Draft], list[Gap]]:
        """Every entity's draft, and gaps for what could not be understood."""
        entities: list[Entity] = []
        gaps: list[Gap] = []
        script_only = {
            (source.path, ordinal)
            for source, facts in self.program.facts(SOURCE)
            for ordinal in facts.get("main_classes", [])
        }
        for dotted in sorted(self.hierarchy.classes):
            info = self.hierarchy.classes[dotted]
            kind = self.classifier.kind(info)
            if kind.is_entity and (info.path, info.span) in script_only:
                detail = f"{info.dotted}: defined under if __name__ == '__main__', not when imported"
                gaps.append(self._gap(info, "script_model", detail))
            elif kind.is_entity:
                entities.append(Entity(info, kind))
                self.references.add_entity(info, kind)
            else:
                gaps.extend(self._unknown_model_base(info))
        declared = [(e.info, e.kind, self.fields.of(e.info)) for e in entities]
        self.backrefs = collect_backrefs(declared, self.reader, self.references)
        drafts = []
        for entity in entities:
            draft, entity_gaps = self._draft(entity)
            drafts.append(draft)
            gaps.extend(entity_gaps)
        return drafts, gaps

    def _draft(self, entity: Entity) -> tuple[Draft, list[Gap]]:
        info, kind = entity.info, entity.kind
        mro = self.hierarchy.mro(self.hierarchy.node(info))
        decls = self._with_backrefs(self.fields.of(info), mro)
        references, unresolved = self.references.of(kind, decls, self.generics.of(kind, mro))
        flags = self._flags(info, kind, mro)
        payload: dict[str, JSON] = {
            "name": info.dotted,
            "framework": kind.framework,
            "fields": [d.name for d in decls],
            "references": references,
            "bases": [_label(p) for p in self.hierarchy.parents(self.hierarchy.node(info))],
        }
        if kind.decoration is not None:
            payload["decorator"] = kind.decoration.external
        if kind.framework in ("sqlalchemy", "sqlmodel"):
            payload["table"] = self._table(info, kind)
        if flags:
            payload["gap"] = ",".join(sorted(flags))
        gaps = [self._gap(info, f, _FLAG_DETAIL[f].format(name=info.dotted)) for f in sorted(flags)]
        gaps += [
            self._gap(
                info, "unresolved_reference", f"{info.dotted}.{d.name}: relationship target {t} is no entity"
            )
            for d, t in unresolved
        ]
        grounding = self._grounding(info, mro, references)
        grounding += tuple(
            self._ground(d.owner.path, d.owner.span, "backref")
            for d in decls
            if d.kind == "backref" and d.owner is not None
        )
        return Draft("entity", f"entity:{info.dotted}", payload, tuple(sorted(set(grounding)))), gaps

    def _with_backrefs(self, decls: list[Decl], mro: tuple[Node, ...]) -> list[Decl]:
        """The declared fields plus backrefs other classes add to this class or its mapped bases."""
        names = {d.name for d in decls}
        out = list(decls)
        for node in reversed(mro):
            for backref in self.backrefs.get(node.key, []) if node.info is not None else []:
                if backref.name not in names:
                    names.add(backref.name)
                    out.append(backref)
        return out

    def _flags(self, info: ClassInfo, kind: Kind, mro: tuple[Node, ...]) -> set[str]:
        flags: set[str] = set()
        for node in mro[1:]:
            if node.kind == "unknown":
                flags.add("unresolved_base")
            elif node.external is not None and not _known_external(node.external):
                flags.add("external_base")
        own = {d.name: d for d in own_decls(info)}
        if kind.decoration is not None and "these" in kind.decoration.kwargs:
            flags.add("dynamic_fields")
        if kind.framework == "sqlalchemy" and "__table__" in own and own["__table__"].value is not None:
            flags.add("dynamic_fields")
        return flags

    def _table(self, info: ClassInfo, kind: Kind) -> str | None:
        for cls in self.fields.mro_classes(info):
            name = next((literal(d.value) for d in own_decls(cls) if d.name == "__tablename__"), None)
            if isinstance(name, str):
                return name
            if kind.framework == "sqlmodel":
                break
        if kind.framework == "sqlmodel" and self.fields.is_table(info):
            return info.name.lower()
        return None

    def _grounding(
        self, info: ClassInfo, mro: tuple[Node, ...], references: list[str]
    ) -> tuple[Grounding, ...]:
        """The class, every first-party class and base-making assignment of its MRO, and each
        referenced entity."""
        edges = {self._ground(info.path, info.span, "class")}
        for node in mro[1:]:
            if node.info is not None:
                edges.add(self._ground(node.info.path, node.info.span, "base"))
            origin = node.value.origin or node.value.symbol if node.value is not None else None
            if origin is not None and origin.path is not None and origin.span is not None:
                edges.add(self._ground(origin.path, origin.span, "base"))
        for dotted in references:
            target = self.hierarchy.classes[dotted]
            if dotted != info.dotted:
                edges.add(self._ground(target.path, target.span, "reference"))
        return tuple(sorted(edges))

    def _ground(self, path: str, span: int, role: str) -> Grounding:
        return self.program.files[path].ground(span, role)

    def _gap(self, info: ClassInfo, reason: str, detail: str) -> Gap:
        line = self.program.files[info.path].spans[info.span].start_line
        return Gap(info.path, reason, detail, line, SOURCE)

    def _unknown_model_base(self, info: ClassInfo) -> list[Gap]:
        """A class with model-like fields whose model-like base is unknown or an unknown outside class."""
        suspects = [
            _label(p)
            for p in self.hierarchy.parents(self.hierarchy.node(info))
            if (p.kind == "unknown" or (p.external is not None and not _known_external(p.external)))
            and MODEL_NAME.search(_label(p))
        ]
        if not suspects or not any(_field_like(d) for d in own_decls(info)):
            return []
        detail = f"{info.dotted}: base {suspects[0]} is not a known model base; fields not read"
        return [self._gap(info, "unknown_model_base", detail)]

    def dynamic_gaps(self) -> list[Gap]:
        """``create_model(...)`` and other run-time model construction, per file."""
        gaps: list[Gap] = []
        for source, facts in self.program.facts(SOURCE):
            for item in facts.get("dynamic", []):
                callee = item.get("callee")
                value = self.evaluator.dotted(source.module or "", callee) if callee else None
                name = value.name if value is not None else None
                local = value is None and callee is not None and "." not in callee  # imported in a function
                if local or (name is not None and fw.parts(name)[0] in fw.FRAMEWORK_TOPS):
                    detail = f"model built at run time, fields not read: {item['text']}"
                    gaps.append(Gap(source.path, "dynamic_model", detail, item["line"], SOURCE))
        return gaps


_FLAG_DETAIL = {
    "unresolved_base": "{name}: a base class cannot be resolved; inherited fields may be missing",
    "external_base": "{name}: an outside base class may add fields that are not read",
    "dynamic_fields": "{name}: fields come from a dynamic definition (these=/__table__) and are not read",
}


def _known_external(external: str) -> bool:
    return (
        fw.root(external) is not None or fw.is_neutral(external) or fw.parts(external)[0] in fw.FRAMEWORK_TOPS
    )


def _label(node: Node) -> str:
    if node.info is not None:
        return node.info.dotted
    if node.external is not None:
        return node.external
    return node.key.split(":", 1)[-1]


def _field_like(decl: Decl) -> bool:
    """An annotated attribute, or a value made by a field-making call, as written."""
    if decl.kind != "assign":
        return False
    if decl.annotation is not None and not ann.is_classvar(decl.annotation):
        return True
    callee = decl.value.get("callee") if decl.value is not None and decl.value.get("kind") == "call" else None
    return isinstance(callee, str) and callee.rsplit(".", 1)[-1] in FIELD_MAKERS
