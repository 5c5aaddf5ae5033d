"""The registry of deterministic extractors (one Dagster asset per entry) and of shared collectors.

Order matters only for display; each extractor's identity is its id and version. Collectors
(``COLLECTORS``) add file-local facts that several extractors read; their ids and the extractors'
ids are keys of the same per-blob facts, so they must all differ.
"""

from __future__ import annotations

import hashlib

from kb_assets.core.blobs import FACTS_ENCODING
from kb_assets.core.extractors.api_routes import ApiRoutesExtractor
from kb_assets.core.extractors.base import Collector, Extractor
from kb_assets.core.extractors.calls import CallsExtractor
from kb_assets.core.extractors.entities import EntitiesExtractor
from kb_assets.core.extractors.event_handlers import EventHandlersExtractor
from kb_assets.core.extractors.imports import ImportsExtractor
from kb_assets.core.extractors.process_paths import ProcessPathsExtractor
from kb_assets.core.extractors.public_api import PublicApiExtractor
from kb_assets.core.ids import NORMALIZATION_VERSION
from kb_assets.core.symbols.collect import SymbolsCollector

EXTRACTORS: tuple[Extractor, ...] = (
    ImportsExtractor(),
    PublicApiExtractor(),
    ApiRoutesExtractor(),
    EventHandlersExtractor(),
    EntitiesExtractor(),
    CallsExtractor(),
    ProcessPathsExtractor(),
)

COLLECTORS: tuple[Collector, ...] = (SymbolsCollector(),)


def extractor(extractor_id: str) -> Extractor:
    """The registered extractor with this id (KeyError names the known ones)."""
    for ex in EXTRACTORS:
        if ex.extractor_id == extractor_id:
            return ex
    raise KeyError(f"unknown extractor {extractor_id!r}; known: {[e.extractor_id for e in EXTRACTORS]}")


def extractor_for_kind(kind: str) -> Extractor | None:
    """The extractor that produces artifacts of ``kind`` (None for model-backed kinds)."""
    return next((ex for ex in EXTRACTORS if ex.kind == kind), None)


def upstream_assets(ex: Extractor, extractors: tuple[Extractor, ...] = EXTRACTORS) -> tuple[str, ...]:
    """The assets of ``extractors`` whose output ``ex`` reads (its optional ``upstream``)."""
    registered = {other.asset_name for other in extractors}
    return tuple(name for name in getattr(ex, "upstream", ()) if name in registered)


def levels(extractors: tuple[Extractor, ...] = EXTRACTORS) -> list[tuple[Extractor, ...]]:
    """The extractors by depth, in registry order within each: those that read no other's asset,
    then those that read only the first level's, and so on (ValueError on a cycle)."""
    placed: set[str] = set()
    remaining, found = list(extractors), []
    while remaining:
        level = tuple(ex for ex in remaining if placed.issuperset(upstream_assets(ex, extractors)))
        if not level:
            cycle = [e.asset_name for e in remaining]
            raise ValueError(f"extractors read each other's assets in a cycle: {cycle}")
        found.append(level)
        placed.update(ex.asset_name for ex in level)
        remaining = [ex for ex in remaining if ex not in level]
    return found


def parser_version(
    extractors: tuple[Extractor, ...] = EXTRACTORS, collectors: tuple[Collector, ...] = COLLECTORS
) -> str:
    """Version of everything cached per blob: the normalization, every collector's facts and the
    bytes the facts are stored as (``FACTS_ENCODING``).

    A change to any of them re-parses each blob once; resolver-only changes (an extractor's
    ``version``) never do.
    """
    versions = [(ex.extractor_id, ex.facts_version) for ex in extractors]
    versions += [(c.collector_id, c.facts_version) for c in collectors]
    parts = [f"{i}={v}" for i, v in sorted(versions)] + [f"encoding={FACTS_ENCODING}"]
    digest = hashlib.sha256(";".join(parts).encode()).hexdigest()[:12]
    return f"n{NORMALIZATION_VERSION}-{digest}"
