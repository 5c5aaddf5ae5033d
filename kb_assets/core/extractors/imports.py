"""Import edges (``import_edge``) with grimp's semantics, grounded on every import statement.

One artifact per (importer module, imported module). Internal names resolve to the module itself
or, failing that, its parent (``from pkg import name`` of a non-module is an import of ``pkg``);
anything else is external and distilled to its top-level name, as grimp does. ``span_mapping`` is
``exact`` only when every grounding statement names the imported module literally; relative
imports, names re-exported through a package, star imports and fallbacks are ``approximate``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kb_assets.core.extractors.base import Draft, Extraction, LocatedGrounding
from kb_assets.core.extractors.import_facts import collect_imports
from kb_assets.core.models import JSON, Gap, Grounding
from kb_assets.core.per_file import PerFile
from kb_assets.core.program import Program, SourceFile
from kb_assets.core.spans import ParsedSource

EXTRACTOR_ID = "imports"


@dataclass(frozen=True, slots=True)
class Target:
    """Where one imported object lands."""

    module: str
    external: bool
    exact: bool
    unresolved: bool = False


@dataclass(slots=True)
class _Edge:
    grounding: set[Grounding] = field(default_factory=set)
    exact: bool = True
    external: bool = False
    type_checking_only: bool = True


def absolute_name(importer: str, is_package: bool, name: str) -> str:
    """Resolve a relative imported-object name against its importer, as grimp does."""
    dots = len(name) - len(name.lstrip("."))
    if dots == 0:
        return name
    parts = importer.split(".")
    keep = len(parts) - dots + (1 if is_package else 0)
    if keep <= 0:
        return ""  # more leading dots than the importer has packages: not importable
    return f"{'.'.join(parts[:keep])}.{name[dots:]}"


def resolve_object(name: str, *, relative: bool, program: Program) -> Target | None:
    """The module an absolute imported-object name refers to (None: nothing to record)."""
    modules = program.module_map.paths
    if name in modules:
        return Target(name, external=False, exact=not relative)
    parent, _, leaf = name.rpartition(".")
    if parent in modules:
        reexport = parent in program.module_map.packages and leaf != "*"
        return Target(parent, external=False, exact=not (relative or reexport or leaf == "*"))
    top = name.split(".", 1)[0]
    if not top:
        return None
    if top in program.module_map.top_level:
        # First-party, but neither the name nor its parent is a module: grimp records nothing
        # and neither do we; the statement becomes an ``unresolved_import`` gap.
        return Target(name, external=False, exact=False, unresolved=True)
    return Target(top, external=True, exact=not relative)


class ImportsExtractor:
    """The ``import_edges`` asset's extractor."""

    extractor_id = EXTRACTOR_ID
    version = "1"
    facts_version = "1"
    kind = "import_edge"
    asset_name = "import_edges"
    description = "Module import edges (grimp semantics), grounded on every import statement."

    def collect(self, source: ParsedSource) -> JSON:
        """Import statements and dynamic imports of one blob."""
        return collect_imports(source)

    def resolve(self, program: Program) -> Extraction:
        """Every (importer, imported) pair of the commit, plus gaps for what cannot be resolved.

        Each file's edges and gaps are its own (its module is every edge's importer) and depend
        on nothing but the file and the module map: they are made once per file (``per_file``)
        and put together in importer order. Files sharing a module name (no ``map_modules``
        makes them) are put together edge by edge instead."""
        sources = list(program.facts(EXTRACTOR_ID))
        if len({source.module for source, _ in sources}) < len(sources):
            return _extraction(_edges_of(sources, program))
        files = _per_file(program)
        by_module = sorted(sources, key=lambda found: found[0].module or "")
        drafts = tuple(d for source, _ in by_module for d in files[source.path].drafts)
        return Extraction(drafts=drafts, gaps=tuple(g for found in files.values() for g in found.gaps))

    def render(self, payload: Mapping[str, JSON], grounding: Sequence[LocatedGrounding]) -> dict[str, JSON]:
        """Add ``lines``: the first line of every grounding import statement at this commit."""
        lines = sorted({g.start_line for g in grounding if g.role == "import"})
        return {**payload, "lines": lines}


def _file_extraction(source: SourceFile, facts: JSON, program: Program) -> Extraction:
    """One file's import edges and gaps (``ImportsExtractor.resolve``)."""
    return _extraction(_edges_of([(source, facts)], program))


_per_file: PerFile[Extraction] = PerFile(EXTRACTOR_ID, _file_extraction)


def _extraction(found: tuple[dict[tuple[str, str], _Edge], list[Gap]]) -> Extraction:
    """The drafts of ``found``'s edges, in (importer, imported) order, and its gaps."""
    edges, gaps = found
    drafts = tuple(_draft(importer, imported, edge) for (importer, imported), edge in sorted(edges.items()))
    return Extraction(drafts=drafts, gaps=tuple(gaps))


def _edges_of(
    files: Sequence[tuple[SourceFile, JSON]], program: Program
) -> tuple[dict[tuple[str, str], _Edge], list[Gap]]:
    """The import edges of ``files``, put together by (importer, imported), and their gaps."""
    edges: dict[tuple[str, str], _Edge] = {}
    gaps: list[Gap] = []
    for source, facts in files:
        gaps.extend(_file_edges(source, facts, program, edges))
    return edges, gaps


def _file_edges(
    source: SourceFile, facts: JSON, program: Program, edges: dict[tuple[str, str], _Edge]
) -> list[Gap]:
    importer = source.module
    assert importer is not None
    gaps: list[Gap] = []
    for stmt in facts["statements"]:
        grounding = source.ground(stmt["span"], "import")
        line = source.spans[stmt["span"]].start_line
        for obj in stmt["objects"]:
            relative = obj.startswith(".")
            name = absolute_name(importer, source.is_package, obj)
            target = resolve_object(name, relative=relative, program=program) if name else None
            if target is None or target.unresolved:
                gaps.append(
                    Gap(source.path, "unresolved_import", f"cannot resolve {obj!r}", line, EXTRACTOR_ID)
                )
            if target is None or target.unresolved or target.module == importer:
                continue
            edge = edges.setdefault((importer, target.module), _Edge())
            edge.grounding.add(grounding)
            edge.exact = edge.exact and target.exact
            edge.external = target.external
            edge.type_checking_only = edge.type_checking_only and bool(stmt["type_checking"])
    for dyn in facts["dynamic"]:
        gaps.append(Gap(source.path, "dynamic_import", dyn["text"], dyn["line"], EXTRACTOR_ID))
    return gaps


def _draft(importer: str, imported: str, edge: _Edge) -> Draft:
    payload: dict[str, JSON] = {
        "importer": importer,
        "imported": imported,
        "external": edge.external,
        "span_mapping": "exact" if edge.exact else "approximate",
        "type_checking_only": edge.type_checking_only,
    }
    return Draft(
        kind="import_edge",
        logical_key=f"import:{importer}->{imported}",
        payload=payload,
        grounding=tuple(sorted(edge.grounding)),
    )
