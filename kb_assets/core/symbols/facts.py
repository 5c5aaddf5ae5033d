"""Typed views of one module's ``symbols`` facts, and relative-import arithmetic.

The resolver reads facts through these views only, so the JSON layout (documented in
``collect``) is interpreted in one place.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kb_assets.core.models import JSON
from kb_assets.core.program import SourceFile
from kb_assets.core.symbols.collect import COLLECTOR_ID

IMPORT_KINDS = frozenset({"import", "from", "star"})


@dataclass(frozen=True, slots=True)
class Binding:
    """One binding statement's effect on one name (``star`` bindings name ``*``)."""

    name: str
    kind: str
    span: int
    module: str | None = None
    attr: str | None = None
    qualname: str | None = None
    aliased: bool = False
    imported: str | None = None
    record: Mapping[str, JSON] = field(default_factory=dict, compare=False, hash=False)

    @property
    def redundant_alias(self) -> bool:
        """``from m import X as X`` / ``import X as X``: the typing spec's explicit re-export."""
        if not self.aliased:
            return False
        return (
            self.attr == self.name
            if self.kind == "from"
            else self.kind == "import" and self.module == self.name
        )

    @classmethod
    def of(cls, record: Mapping[str, JSON]) -> Binding:
        """The view of one binding record."""
        return cls(
            name=record["name"],
            kind=record["kind"],
            span=record["span"],
            module=record.get("module"),
            attr=record.get("attr"),
            qualname=record.get("qualname"),
            aliased=bool(record.get("aliased")),
            imported=record.get("imported"),
            record=record,
        )


@dataclass(frozen=True, slots=True)
class ClassFacts:
    """One class: its span, its record (bases, keywords, decorators) and its body's bindings."""

    qualname: str
    span: int
    bindings: tuple[Binding, ...]
    record: Mapping[str, JSON] = field(compare=False, hash=False)


@dataclass(frozen=True, slots=True)
class ModuleFacts:
    """One parsed module's bindings, classes and ``__all__`` operations."""

    name: str
    source: SourceFile
    bindings: tuple[Binding, ...]
    classes: Mapping[str, ClassFacts]
    all_ops: tuple[Mapping[str, JSON], ...]

    @classmethod
    def of(cls, source: SourceFile) -> ModuleFacts | None:
        """The view of a module file's facts (None when it has no module name or no facts)."""
        facts = source.facts.get(COLLECTOR_ID)
        if source.module is None or facts is None:
            return None
        classes = {
            c["qualname"]: ClassFacts(
                c["qualname"], c["span"], tuple(Binding.of(b) for b in c["bindings"]), c
            )
            for c in facts["classes"]
        }
        return cls(
            name=source.module,
            source=source,
            bindings=tuple(Binding.of(b) for b in facts["bindings"]),
            classes=classes,
            all_ops=tuple(facts["all"]),
        )

    def absolute(self, written: str) -> str | None:
        """The absolute module a (possibly relative) ``from`` module resolves to from here."""
        return absolute_module(self.name, self.source.is_package, written)


def absolute_module(importer: str, is_package: bool, written: str) -> str | None:
    """``..m`` from ``a.b.c`` is ``a.m``; None when there are more dots than packages."""
    dots = len(written) - len(written.lstrip("."))
    if dots == 0:
        return written or None
    parts = importer.split(".")
    base = parts if is_package else parts[:-1]
    keep = len(base) - (dots - 1)
    if keep <= 0:
        return None
    rest = written[dots:]
    return ".".join([*base[:keep], rest]) if rest else ".".join(base[:keep])
