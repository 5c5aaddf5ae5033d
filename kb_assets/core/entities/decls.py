"""What one class body declares, and what its values and decorators are, read through the symbol table.

``own_decls`` merges a class body's bindings per name, as the class namespace does: a name keeps
the position of its first binding, the last annotation and the last value (statements under
``if TYPE_CHECKING:`` never run and are skipped). ``Reader`` answers the framework questions
about a declaration — is its value ``Column(...)``/``relationship(...)``, ``attr.ib()``,
``Field(...)``; is the method a ``@declared_attr``; which model decorators the class carries —
by evaluating the written callee in the declaring module (see ``evaluate``) and matching the
outside name (``frameworks``); a callee that cannot be resolved is matched as written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kb_assets.core.entities import frameworks as fw
from kb_assets.core.entities.annotations import is_classvar, is_mapped
from kb_assets.core.entities.evaluate import Evaluator
from kb_assets.core.entities.hierarchy import ClassInfo
from kb_assets.core.models import JSON

Summary = Mapping[str, JSON]


@dataclass(frozen=True, slots=True)
class Decl:
    """One name a class body binds (``owner`` None: a field the framework root itself declares)."""

    name: str
    owner: ClassInfo | None
    kind: str = "assign"
    annotation: Summary | None = field(default=None, compare=False)
    value: Summary | None = field(default=None, compare=False)
    decorators: tuple[Summary, ...] = field(default=(), compare=False)


@dataclass(frozen=True, slots=True)
class Decoration:
    """A model-making class decorator and its keyword arguments (``frozen=True``...)."""

    kind: fw.DecoratorKind
    kwargs: Summary
    external: str
    key: str


def own_decls(info: ClassInfo) -> list[Decl]:
    """The class body's declarations, one per name, in class-namespace order."""
    merged: dict[str, dict[str, Any]] = {}
    for binding in info.facts.bindings:
        record = binding.record
        if record.get("type_checking") or binding.kind not in ("assign", "function", "class"):
            continue
        entry = merged.setdefault(binding.name, {"annotation": None, "value": None})
        entry["kind"] = binding.kind
        entry["decorators"] = tuple(record.get("decorators") or ())
        if record.get("annotation") is not None:
            entry["annotation"] = record["annotation"]
        if binding.kind != "assign" or record.get("value") is not None:
            entry["value"] = record.get("value")
    return [Decl(name, info, **entry) for name, entry in merged.items()]


def literal(summary: Summary | None) -> JSON:
    """The value of a literal summary (None for anything else)."""
    return summary.get("value") if summary is not None and summary.get("kind") == "literal" else None


class Reader:
    """Framework questions about declarations and decorators (memoized through the evaluator)."""

    def __init__(self, evaluator: Evaluator) -> None:
        self.evaluator = evaluator

    def external(self, module: str, dotted: str | None) -> str | None:
        """The outside name ``dotted`` stands for in ``module`` (as written when unresolvable; a
        first-party class or function's dotted path, which matters when the repository is the
        framework itself)."""
        if not dotted:
            return None
        value = self.evaluator.dotted(module, dotted)
        if value is None:
            return fw.written_guess(dotted)
        origin = value.origin.dotted if value.origin is not None else None
        if origin is not None and fw.parts(origin)[0] in fw.FRAMEWORK_TOPS:
            return origin  # the framework's own alias (``frozen = partial(define, ...)`` in attrs)
        return value.name

    def callee(self, decl: Decl) -> str | None:
        """The outside name of the callable a declaration's value calls, if it is a call."""
        value = decl.value
        if decl.owner is None or value is None or value.get("kind") != "call":
            return None
        return self.external(decl.owner.module, value.get("callee"))

    def is_sa_attribute(self, decl: Decl) -> bool:
        """A mapper attribute: ``Mapped[...]``, ``Column``, ``relationship``, ``@declared_attr``."""
        if decl.name.startswith("__") and decl.name.endswith("__"):
            return False
        if decl.kind == "function":
            names = self._decorator_names(decl.owner.module, decl.decorators) if decl.owner else []
            return any(fw.is_declared_attr(ext) for ext in names)
        if decl.kind != "assign" or is_classvar(decl.annotation):
            return False
        callee = self.callee(decl)
        return is_mapped(decl.annotation) or (callee is not None and fw.is_sa_property(callee))

    def is_relationship(self, decl: Decl) -> bool:
        """``relationship(...)`` (any spelling, ``sqlmodel.Relationship`` included)."""
        callee = self.callee(decl)
        return callee is not None and fw.is_relationship(callee)

    def decorations(self, info: ClassInfo) -> list[Decoration]:
        """The model-making decorators of a class, in source order."""
        found: list[Decoration] = []
        for summary in info.facts.record.get("decorators", []):
            call = summary.get("kind") == "call"
            written = summary.get("callee") if call else summary.get("dotted")
            ext = self.external(info.module, written)
            kind = fw.decorator(ext) if ext is not None else None
            if kind is not None:
                value = self.evaluator.dotted(info.module, str(written))
                origin = value.origin.dotted if value is not None and value.origin is not None else None
                key = f"{ext}@{origin}" if origin else str(ext)
                kwargs = summary.get("kwargs", {}) if call else {}
                found.append(Decoration(kind, kwargs, str(ext), key))
        return found

    def _decorator_names(self, module: str, decorators: tuple[Summary, ...]) -> list[str]:
        names = []
        for summary in decorators:
            written = summary.get("callee") if summary.get("kind") == "call" else summary.get("dotted")
            ext = self.external(module, written)
            if ext is not None:
                names.append(ext)
        return names
