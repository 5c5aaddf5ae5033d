"""The deterministic facts shown to the model next to a module's, package's or repository's code.

They come from the deterministic layer (import edges, public surface, unit counts) and are bounded
so a prompt stays small on any repository; lists cut short say how many were left out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kb_assets.core.models import JSON
from kb_assets.core.program import SourceFile

MAX_LISTED = 30

Edge = tuple[str, str, bool]
"""(importer, imported, external)."""


def bounded(names: Sequence[str], limit: int = MAX_LISTED) -> list[str]:
    """At most ``limit`` names, then ``+N more`` when some were left out."""
    shown = list(names[:limit])
    return [*shown, f"+{len(names) - limit} more"] if len(names) > limit else shown


def outline(source: SourceFile) -> list[str]:
    """The top-level classes and functions of a file, as ``class X`` / ``def f``."""
    lines = []
    for span in source.spans:
        if "." not in span.fq_symbol_path and span.kind in ("class", "function"):
            lines.append(f"{'class' if span.kind == 'class' else 'def'} {span.fq_symbol_path}")
    return lines


def module_facts(source: SourceFile, edges: Sequence[Edge]) -> dict[str, JSON]:
    """A module's path, outline, what it imports and what imports it."""
    name = source.module or ""
    imports = sorted({b for a, b, _ in edges if a == name})
    imported_by = sorted({a for a, b, external in edges if b == name and not external})
    return {
        "module": name,
        "path": source.path,
        "defines": bounded(outline(source)),
        "imports": bounded(imports),
        "imported_by": bounded(imported_by),
    }


def package_facts(
    init: SourceFile,
    members: Sequence[SourceFile],
    edges: Sequence[Edge],
    public: Sequence[str],
    limit: int,
) -> dict[str, JSON]:
    """A package's members with their outlines, the import graph between them (folded to direct
    members), the packages it depends on outside itself, and its public names."""
    package = init.module or ""
    names = [m.module or "" for m in members]

    def member_of(module: str) -> str | None:
        if module == package or not module.startswith(f"{package}."):
            return None
        return f"{package}.{module[len(package) + 1 :].split('.', 1)[0]}"

    internal: set[tuple[str, str]] = set()
    outside: set[str] = set()
    for importer, imported, _ in edges:
        source = member_of(importer) or (package if importer == package else None)
        if source is None:
            continue
        target = member_of(imported)
        if target is not None and target != source:
            internal.add((source, target))
        elif target is None and imported != package:
            outside.add(imported)
    return {
        "package": package,
        "path": init.path,
        "members": bounded(names, limit),
        "member_outlines": {m.module or "": bounded(outline(m), 12) for m in members[:limit]},
        "member_imports": bounded([f"{a} -> {b}" for a, b in sorted(internal)], 2 * MAX_LISTED),
        "depends_on": bounded(sorted(outside)),
        "public": bounded(list(public)),
    }


def repo_facts(
    surface: Sequence[str], packages: Sequence[str], top_level: Sequence[str], counts: Mapping[str, int]
) -> dict[str, JSON]:
    """The repository's top-level packages and modules and how many units of each kind it has."""
    return {
        "top_level_packages": bounded(list(packages)),
        "top_level_modules": bounded([m for m in top_level if m not in packages]),
        "surface": list(surface),
        "units": dict(counts),
    }
