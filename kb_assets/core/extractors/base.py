"""What an extractor is: a file-local collector plus a commit-wide resolver.

Splitting the two is what makes incremental indexing exact and cheap: ``collect`` runs once per
blob during the single parse and its facts are cached by blob id forever; ``resolve`` sees the
whole commit (every file's facts and the module map) and is the only place cross-file knowledge is
made, so it is recomputed per commit from cached facts without parsing anything again.

A ``Collector`` is the first half alone: file-local facts that several extractors share (such as
the names each module binds), cached with the rest under its own id. Collector and extractor ids
share one key space in a blob's facts, so each id is unique across both registries.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from kb_assets.core.models import JSON, Gap, Grounding

if TYPE_CHECKING:
    from kb_assets.core.program import Program
    from kb_assets.core.spans import ParsedSource


@dataclass(frozen=True, slots=True)
class Draft:
    """An artifact before it has an identity: what an extractor claims, and what grounds it."""

    kind: str
    logical_key: str
    payload: Mapping[str, JSON]
    grounding: tuple[Grounding, ...]
    confidence: float = 1.0


@dataclass(frozen=True, slots=True)
class LocatedGrounding:
    """A grounding edge placed at one commit: the occurrence's lines are known."""

    span_id: str
    path: str
    role: str
    start_line: int
    end_line: int


@dataclass(frozen=True, slots=True)
class Extraction:
    """Everything one extractor produced for one commit."""

    drafts: tuple[Draft, ...]
    gaps: tuple[Gap, ...] = ()


class Collector(Protocol):
    """A facts-only collector: runs on every parsed blob, produces no artifacts of its own."""

    collector_id: str
    facts_version: str

    def collect(self, source: ParsedSource) -> JSON:
        """File-local facts of one parsed blob (JSON; spans referenced by ordinal)."""
        ...


class Extractor(Protocol):
    """A deterministic extractor, registered once and turned into one Dagster asset."""

    extractor_id: str
    version: str
    facts_version: str
    kind: str
    asset_name: str
    description: str

    def collect(self, source: ParsedSource) -> JSON:
        """File-local facts of one parsed blob (JSON; spans referenced by ordinal)."""
        ...

    def resolve(self, program: Program) -> Extraction:
        """Commit-wide resolution of every file's facts into drafts and gaps."""
        ...

    def render(self, payload: Mapping[str, JSON], grounding: Sequence[LocatedGrounding]) -> dict[str, JSON]:
        """The payload as users see it at one commit (location-derived fields filled in)."""
        ...
