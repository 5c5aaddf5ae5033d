"""SQLAlchemy backrefs: ``relationship(Parent, backref="children")`` adds a field to *another* class.

SQLAlchemy creates the ``children`` relationship on ``Parent`` when mappers are configured, so
``inspect(Parent).attrs`` lists it; it counts as a field of ``Parent`` (and of its mapped
subclasses, which inherit it), after the fields ``Parent`` declares, ordered by where the
declaring classes are (path, then source order). ``backref=`` is a string or a
``backref("name", ...)`` call. The field refers back to the declaring class, and the target's
artifact is grounded on it (role ``backref``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kb_assets.core.entities import frameworks as fw
from kb_assets.core.entities.classify import Kind
from kb_assets.core.entities.decls import Decl, Reader, literal
from kb_assets.core.entities.hierarchy import ClassInfo
from kb_assets.core.entities.references import References


@dataclass(frozen=True, slots=True)
class Backref:
    """A field one class's relationship adds to the class it points at."""

    target: str
    decl: Decl


def backref_name(reader: Reader, decl: Decl) -> str | None:
    """The name in ``backref="name"`` / ``backref=backref("name", ...)``, if the value has one."""
    kwargs = decl.value.get("kwargs") if decl.value is not None else None
    spec = kwargs.get("backref") if isinstance(kwargs, Mapping) else None
    if not isinstance(spec, Mapping) or decl.owner is None:
        return None
    name = literal(spec)
    if isinstance(name, str):
        return name
    if spec.get("kind") != "call":
        return None
    callee = reader.external(decl.owner.module, spec.get("callee"))
    args = spec.get("args") or []
    if callee is None or fw.parts(callee)[1] != "backref" or not args:
        return None
    name = literal(args[0])
    return name if isinstance(name, str) else None


def collect_backrefs(
    entities: list[tuple[ClassInfo, Kind, list[Decl]]], reader: Reader, references: References
) -> dict[str, list[Decl]]:
    """Target entity -> the backref fields declared on it, in (path, source) order."""
    found: list[tuple[tuple[str, int, int], Backref]] = []
    for info, kind, decls in entities:
        if kind.framework != "sqlalchemy":
            continue
        for position, decl in enumerate(decls):
            name = backref_name(reader, decl) if decl.owner is info and reader.is_relationship(decl) else None
            target = references.related(decl, kind.registry) if name is not None else None
            if name is not None and target is not None:
                synthetic = Decl(name, info, kind="backref")
                found.append(((info.path, info.span, position), Backref(target, synthetic)))
    by_target: dict[str, list[Decl]] = {}
    for _, backref in sorted(found, key=lambda item: item[0]):
        by_target.setdefault(backref.target, []).append(backref.decl)
    return by_target
