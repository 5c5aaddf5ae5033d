"""What event registrations are resolved against (one file at a time) and what they yield.

A ``Context`` wraps one file: name resolution at its registration sites (``event_names``), the
grounding edges a resolved name brings (its definition and every import hop followed to it), and
the registrations and gaps found so far. ``Registration`` and ``Found`` are what the per-framework
rules produce.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from kb_assets.core.extractors.event_names import Names, Where
from kb_assets.core.models import JSON, Gap, Grounding
from kb_assets.core.program import SourceFile
from kb_assets.core.symbols.model import Symbol
from kb_assets.core.symbols.table import SymbolTable

EXTRACTOR_ID = "event_handlers"


def literal(summary: JSON) -> JSON:
    """The value of a literal ``values.summarize`` summary (None for anything else)."""
    if isinstance(summary, dict) and summary.get("kind") == "literal":
        return summary.get("value")
    return None


@dataclass(frozen=True, slots=True, order=True)
class Registration:
    """One way a handler is registered (location-free; sorted by these fields)."""

    framework: str
    event: str
    target: str
    site: str

    def as_json(self) -> dict[str, JSON]:
        """The registration as stored in the payload."""
        return {"framework": self.framework, "event": self.event, "target": self.target, "site": self.site}


@dataclass(frozen=True, slots=True)
class Found:
    """A recognized registration of one handler, with every span it depends on."""

    handler: str
    registration: Registration
    grounding: tuple[Grounding, ...]


class Context:
    """One file being read for registrations: resolution at its sites, and what was found."""

    def __init__(
        self, table: SymbolTable, source: SourceFile, locals_: Mapping[str, Mapping[str, JSON]]
    ) -> None:
        self.table, self.source = table, source
        self.module = source.module or ""
        self.names = Names(table, source, locals_)
        self.found: list[Found] = []
        self.gaps: list[Gap] = []

    def resolve(self, where: Where, dotted: str) -> Symbol | None:
        """What ``dotted``, written at ``where``, means (None: unresolvable)."""
        return self.names.resolve(where, dotted)

    def target(self, where: Where, dotted: str) -> Symbol | None:
        """Like ``resolve``, but ``Base.metadata`` with an unknown member of a first-party class or
        variable still names ``pkg.db.Base.metadata``, on ``Base``'s span."""
        found = self.resolve(where, dotted)
        parts = dotted.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            if found is not None:
                break
            prefix = self.resolve(where, ".".join(parts[:cut]))
            if prefix is not None and prefix.kind in ("class", "attribute") and prefix.dotted is not None:
                found = replace(prefix, kind="attribute", dotted=".".join([prefix.dotted, *parts[cut:]]))
        return found

    def edges(self, symbol: Symbol, role: str) -> list[Grounding]:
        """Grounding on a symbol's definition (``role``) and each import hop followed to it."""
        files = self.table.program.files
        out = [files[path].ground(ordinal, "import") for path, ordinal in symbol.chain if path in files]
        if symbol.path is not None and symbol.span is not None and symbol.path in files:
            out.append(files[symbol.path].ground(symbol.span, role))
        return out

    def add(self, handler: Symbol, registration: Registration, span: int, extra: Iterable[Grounding]) -> None:
        """Record one registration of ``handler`` made at span ``span`` of this file."""
        grounding = [*self.edges(handler, "handler"), self.source.ground(span, "registration"), *extra]
        self.found.append(Found(handler.target or "", registration, tuple(sorted(set(grounding)))))

    def handler(self, where: Where, arg: Mapping[str, JSON], line: int, what: str) -> Symbol | None:
        """The handler an argument names; a lambda or an unresolvable name is a recorded gap."""
        if arg.get("lambda"):
            self.gap("lambda_listener", f"{what}: the handler is a lambda", line)
            return None
        name = arg.get("name")
        symbol = self.resolve(where, name) if isinstance(name, str) else None
        if symbol is None:
            written = name or arg.get("text") or arg.get("str") or "?"
            self.gap("unresolved_handler", f"{what}: cannot resolve handler {written!r}", line)
        return symbol

    def gap(self, reason: str, detail: str, line: int) -> None:
        """Record something not understood, at a line of this file."""
        self.gaps.append(Gap(self.source.path, reason, detail, line, EXTRACTOR_ID))

    def line(self, span: int) -> int:
        """The first line of one of this file's spans."""
        return self.source.spans[span].start_line
