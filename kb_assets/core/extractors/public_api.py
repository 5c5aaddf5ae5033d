"""Public API (``public_symbol``): every name each package's ``__init__`` exposes, and what it is.

One artifact per exposed name of every package (subpackages included), keyed ``public:PKG.NAME``.
Which names: ``__all__`` when the ``__init__`` declares it (``+=``, ``.extend``, ``.append`` and
concatenations with other modules' ``__all__`` included); otherwise the public names in griffe's
sense with its redundant-alias convention (the typing spec's library-interface rules) — no
leading underscore, and not merely imported: ``from .x import A`` alone does not export ``A``,
but ``from .x import A as A``, a star import and importing the package's own submodule do. See
``SymbolTable.public_names`` and ``kb_gates.griffe_oracle`` for the remaining differences from
griffe.

``target`` is the dotted path of the definition after every re-export hop. A name that leaves the
repository keeps the external dotted name as ``target`` with ``gap: "external"``; a name that
cannot be resolved has ``target: null`` and ``gap: "unresolved"``; every name of a package whose
``__all__`` is (partly) dynamic carries ``gap: "dynamic_all"``. Each of these is also recorded as
a ``Gap``. Grounding: the ``__init__`` statement that binds the name (role ``binding``), every
import statement followed on the way (``reexport``) and the definition (``definition``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kb_assets.core.extractors.base import Draft, Extraction, LocatedGrounding
from kb_assets.core.models import JSON, Gap, Grounding
from kb_assets.core.program import Program, SourceFile
from kb_assets.core.spans import ParsedSource
from kb_assets.core.symbols.model import Exports, Symbol
from kb_assets.core.symbols.table import SymbolTable, symbol_table

EXTRACTOR_ID = "public_api"

_PAYLOAD_GAP = {"unresolved_export": "unresolved", "external_reexport": "external"}
"""The payload's ``gap`` word for each recorded gap reason."""


class PublicApiExtractor:
    """The ``public_api`` asset's extractor (reads the shared ``symbols`` facts)."""

    extractor_id = EXTRACTOR_ID
    version = "1"
    facts_version = "0"
    kind = "public_symbol"
    asset_name = "public_api"
    description = "Names each package's __init__ exposes (griffe semantics), resolved through re-exports."

    def collect(self, source: ParsedSource) -> JSON:
        """Nothing of its own: the ``symbols`` collector's facts are all it needs."""
        return None

    def resolve(self, program: Program) -> Extraction:
        """One draft per exposed name of every package, plus gaps for what is flagged."""
        table = symbol_table(program)
        drafts: list[Draft] = []
        gaps: list[Gap] = []
        for source in program.modules():
            if not source.is_package or source.module not in table.facts:
                continue
            package = _Package(table, source)
            for name in package.exports.names:
                draft, gap = package.entry(name)
                drafts.append(draft)
                gaps.extend(gap)
            gaps.extend(
                Gap(source.path, "dynamic_all", text, line, EXTRACTOR_ID)
                for line, text in package.exports.dynamic
            )
        return Extraction(drafts=tuple(drafts), gaps=tuple(gaps))

    def render(self, payload: Mapping[str, JSON], grounding: Sequence[LocatedGrounding]) -> dict[str, JSON]:
        """The payload as stored: it has no location-derived fields."""
        return dict(payload)


class _Package:
    """One package ``__init__`` being described."""

    def __init__(self, table: SymbolTable, source: SourceFile) -> None:
        self.table, self.source = table, source
        self.name = source.module or ""
        self.exports: Exports = table.exports(self.name)

    def entry(self, name: str) -> tuple[Draft, list[Gap]]:
        """The draft for one exposed name, and the gaps it carries."""
        symbol = self.table.lookup(self.name, name)
        binding = self._binding_span(name, symbol)
        gaps = self._gaps(f"{self.name}.{name}", symbol, self.source.spans[binding].start_line)
        reasons = [_PAYLOAD_GAP[g.reason] for g in gaps] + (["dynamic_all"] if self.exports.dynamic else [])
        payload: dict[str, JSON] = {
            "package": self.name,
            "name": name,
            "symbol_kind": symbol.kind if symbol is not None else None,
            "target": symbol.target if symbol is not None else None,
        }
        if reasons:
            payload["gap"] = ",".join(reasons)
        key = f"public:{self.name}.{name}"
        return Draft("public_symbol", key, payload, self._grounding(symbol, binding)), gaps

    def _gaps(self, qualified: str, symbol: Symbol | None, line: int) -> list[Gap]:
        """``unresolved_export`` for a name that resolves to nothing, ``external_reexport`` for one
        that leaves the repository."""
        if symbol is None:
            detail = f"{qualified} cannot be resolved"
            return [Gap(self.source.path, "unresolved_export", detail, line, EXTRACTOR_ID)]
        if symbol.is_external:
            detail = f"{qualified} re-exports {symbol.external}"
            return [Gap(self.source.path, "external_reexport", detail, line, EXTRACTOR_ID)]
        return []

    def _binding_span(self, name: str, symbol: Symbol | None) -> int:
        """The ``__init__`` span that binds ``name``: its first hop, its definition, the statement
        binding it, the ``__all__`` statement listing it, or at worst the module span."""
        if symbol is not None and symbol.chain and symbol.chain[0][0] == self.source.path:
            return symbol.chain[0][1]
        if (
            symbol is not None
            and not symbol.chain
            and symbol.path == self.source.path
            and symbol.span is not None
        ):
            return symbol.span
        entry = self.table.namespaces.get(self.name).get(name)
        if entry is not None:
            return entry.binding.span
        implicit = self.table.submodule_imports(self.name).get(name)
        if implicit is not None:
            return implicit
        for op in self.table.facts[self.name].all_ops:
            if op.get("span") is not None and any(item.get("name") == name for item in op.get("items", [])):
                return int(op["span"])
        return 0

    def _grounding(self, symbol: Symbol | None, binding: int) -> tuple[Grounding, ...]:
        """Binding, re-export hops and definition, as grounding edges."""
        edges = [self.source.ground(binding, "binding")]
        hops = symbol.chain if symbol is not None else ()
        for path, ordinal in hops:
            if (path, ordinal) != (self.source.path, binding):
                edges.append(self.table.program.files[path].ground(ordinal, "reexport"))
        if symbol is not None and symbol.path is not None and symbol.span is not None:
            edges.append(self.table.program.files[symbol.path].ground(symbol.span, "definition"))
        return tuple(sorted(set(edges)))
