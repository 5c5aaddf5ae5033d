"""The first-party entities an entity's fields name: in annotations and in ``relationship()``.

An annotation is walked through subscripts (``list[X]``, ``Optional[X]``, ``dict[str, X]``,
``Mapped[list["X"]]``; only the first argument of ``Annotated``, nothing inside ``Literal``),
unions (``X | None``) and string forward references (parsed, then walked the same way). Names
resolve in the body of the class that declares the field (a nested class), then in its module
through the symbol table (imports under ``TYPE_CHECKING`` included). A ``relationship()``
target — its first argument or ``argument=`` — is a class, or a string SQLAlchemy looks up in
the declarative registry: by class name among the entities of the same registry (else of any
registry, when that is unambiguous), or by full dotted path. A name inside a SQLAlchemy or
SQLModel annotation that the module does not bind is looked up the same way, since SQLAlchemy
resolves ``Mapped["X"]`` against the registry too. A relationship target that resolves to no
entity is reported. The type arguments of a parametrized generic base (``class
Page(Paginated[Item])``, ``RootModel[list[Item]]``) count for pydantic models when they reach a
field (see ``generics``). A name bound to a first-party type alias (``AnyCreds = Union[A, B]``)
is walked through the alias's value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kb_assets.core.entities.annotations import Summary, parse_string
from kb_assets.core.entities.classify import Classifier, Kind
from kb_assets.core.entities.decls import Decl, Reader
from kb_assets.core.entities.evaluate import Evaluator
from kb_assets.core.entities.hierarchy import ClassInfo

_MAX_DEPTH = 8


class References:
    """Resolves field types and relationship targets to entities (one commit)."""

    def __init__(self, evaluator: Evaluator, classifier: Classifier, reader: Reader) -> None:
        self.evaluator, self.classifier, self.reader = evaluator, classifier, reader
        self.entities: dict[str, Kind] = {}
        self._by_name: dict[str, list[str]] = {}
        self._scope: str | None = None  # the class whose body writes the annotation being walked

    def add_entity(self, info: ClassInfo, kind: Kind) -> None:
        """Register an entity (every entity is added before any ``of`` call)."""
        self.entities[info.dotted] = kind
        self._by_name.setdefault(info.name, []).append(info.dotted)

    def of(
        self, kind: Kind, fields: list[Decl], arguments: Sequence[tuple[str, Summary]] = ()
    ) -> tuple[list[str], list[tuple[Decl, str]]]:
        """Sorted referenced entities, and the relationship targets that resolve to none.

        ``arguments``: type arguments of parametrized generic bases, each with the module that
        writes it (pydantic substitutes them into the inherited fields' types)."""
        found: set[str] = set()
        unresolved: list[tuple[Decl, str]] = []
        registry = kind.registry if kind.framework in ("sqlalchemy", "sqlmodel") else None
        for module, argument in arguments:
            self._walk(argument, module, registry, found, 0)
        for decl in fields:
            if decl.kind == "backref" and decl.owner is not None:
                found.add(decl.owner.dotted)
            if decl.owner is None or decl.kind != "assign":
                continue
            module, self._scope = decl.owner.module, decl.owner.dotted
            self._walk(decl.annotation, module, registry, found, 0)
            target = self._relationship_target(decl)
            if target is not None and not self._target(target, module, registry, found):
                unresolved.append((decl, _text(target)))
            self._scope = None
        return sorted(found), unresolved

    def related(self, decl: Decl, registry: str | None) -> str | None:
        """The entity a ``relationship()`` declaration points at: its target argument, else the
        one entity its annotation names (``Mapped[list["Child"]]``)."""
        if decl.owner is None:
            return None
        found: set[str] = set()
        target = self._relationship_target(decl)
        self._scope = decl.owner.dotted
        if target is not None:
            self._target(target, decl.owner.module, registry, found)
        else:
            self._walk(decl.annotation, decl.owner.module, registry, found, 0)
        self._scope = None
        return next(iter(found)) if len(found) == 1 else None

    def _relationship_target(self, decl: Decl) -> Summary | None:
        if decl.value is None or not self.reader.is_relationship(decl):
            return None
        args = decl.value.get("args") or []
        target = args[0] if args else (decl.value.get("kwargs") or {}).get("argument")
        return target if isinstance(target, Mapping) and target.get("kind") in ("name", "literal") else None

    def _target(self, target: Summary, module: str, registry: str | None, found: set[str]) -> bool:
        """Add a relationship target; False when it names no entity."""
        value = target.get("value")
        if isinstance(value, str):
            hit = self._registry(value.strip(), registry) or self._resolve(module, value.strip())
        else:
            hit = self._resolve(module, str(target.get("dotted")))
        if hit is not None:
            found.add(hit)
        return hit is not None

    def _walk(
        self, summary: Summary | None, module: str, registry: str | None, found: set[str], depth: int
    ) -> None:
        if summary is None or depth > _MAX_DEPTH:
            return
        kind = summary.get("kind")
        if kind == "name":
            self._name(str(summary.get("dotted")), module, registry, found, depth)
        elif kind == "subscript":
            head = str(summary.get("dotted") or "").rsplit(".", 1)[-1]
            items = [i for i in summary.get("index") or [] if isinstance(i, Mapping)]
            if head == "Literal":
                return
            if head == "Annotated":
                items = items[:1]
            elif summary.get("dotted"):
                self._walk({"kind": "name", "dotted": summary["dotted"]}, module, registry, found, depth + 1)
            for item in items:
                self._walk(item, module, registry, found, depth + 1)
        elif kind == "union":
            for item in summary.get("items") or []:
                self._walk(item, module, registry, found, depth + 1)
        elif kind == "literal" and isinstance(summary.get("value"), str):
            self._walk(parse_string(str(summary["value"])), module, registry, found, depth + 1)

    def _name(self, dotted: str, module: str, registry: str | None, found: set[str], depth: int) -> None:
        """A name in an annotation: an entity, a registry name (SQLAlchemy), or a type alias."""
        hit = self._resolve(module, dotted)
        if hit is None and registry is not None:
            hit = self._registry(dotted, registry)
        if hit is not None:
            found.add(hit)
        else:
            self._alias(module, dotted, registry, found, depth)

    def _alias(self, module: str, dotted: str, registry: str | None, found: set[str], depth: int) -> None:
        """A first-party type alias (``AnyCreds = Union[A, B]``, ``X: TypeAlias = list[A]``):
        walk its value in the module that assigns it."""
        value = self.evaluator.dotted(module, dotted)
        symbol = value.symbol if value is not None else None
        if symbol is None or symbol.is_external or symbol.kind != "attribute" or symbol.module is None:
            return
        assigned = (symbol.facts or {}).get("value")
        if isinstance(assigned, Mapping) and assigned.get("kind") in ("subscript", "union"):
            scope, self._scope = self._scope, None  # the alias's value is read in its module
            self._walk(assigned, symbol.module, registry, found, depth + 1)
            self._scope = scope

    def _resolve(self, module: str, dotted: str) -> str | None:
        """The entity a dotted name written in ``module`` names, if any: first a class nested in
        the class whose body writes it (a class body's own names shadow the module's)."""
        if self._scope is not None and f"{self._scope}.{dotted}" in self.entities:
            return f"{self._scope}.{dotted}"
        value = self.evaluator.dotted(module, dotted)
        cls = value.first_party_class if value is not None else None
        return cls.dotted if cls is not None and cls.dotted in self.entities else None

    def _registry(self, name: str, registry: str | None) -> str | None:
        """``relationship("Name")``: the mapped class of that name (or full dotted path)."""
        if name in self.entities and self.entities[name].framework in ("sqlalchemy", "sqlmodel"):
            return name
        mapped = [
            d
            for d in self._by_name.get(name.rsplit(".", 1)[-1], [])
            if self.entities[d].framework in ("sqlalchemy", "sqlmodel")
            and ("." not in name or d.endswith(f".{name}"))
        ]
        same = [d for d in mapped if self.entities[d].registry == registry]
        for candidates in (same, mapped):
            if len(candidates) == 1:
                return candidates[0]
        return None


def _text(target: Summary) -> str:
    value = target.get("value")
    return repr(value) if isinstance(value, str) else str(target.get("dotted"))
