"""The registry of deterministic extractors: one Dagster asset is generated per entry.

Order matters only for display; each extractor's identity is its id and version.
"""

from __future__ import annotations

import hashlib

from kb_assets.core.extractors.base import Extractor
from kb_assets.core.extractors.imports import ImportsExtractor
from kb_assets.core.ids import NORMALIZATION_VERSION

EXTRACTORS: tuple[Extractor, ...] = (ImportsExtractor(),)


def extractor(extractor_id: str) -> Extractor:
    """The registered extractor with this id (KeyError names the known ones)."""
    for ex in EXTRACTORS:
        if ex.extractor_id == extractor_id:
            return ex
    raise KeyError(f"unknown extractor {extractor_id!r}; known: {[e.extractor_id for e in EXTRACTORS]}")


def extractor_for_kind(kind: str) -> Extractor | None:
    """The extractor that produces artifacts of ``kind`` (None for model-backed kinds)."""
    return next((ex for ex in EXTRACTORS if ex.kind == kind), None)


def parser_version(extractors: tuple[Extractor, ...] = EXTRACTORS) -> str:
    """Version of everything cached per blob: the normalization and every collector's facts.

    A change to any of them re-parses each blob once; resolver-only changes (an extractor's
    ``version``) never do.
    """
    parts = [f"{ex.extractor_id}={ex.facts_version}" for ex in sorted(extractors, key=lambda e: e.extractor_id)]
    digest = hashlib.sha256(";".join(parts).encode()).hexdigest()[:12]
    return f"n{NORMALIZATION_VERSION}-{digest}"
