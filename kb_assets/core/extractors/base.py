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

from abc import abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, overload

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


class OnDemandDrafts(Sequence[Draft]):
    """Drafts made when they are read, not held: an extractor with very many (the call graph's
    edges) hands these over instead of a tuple, so that a writer can build, store and drop them a
    batch at a time, and a forked copy can make its share of them itself from what both processes
    hold (``kb_assets.indexing.artifact_writes``). Each read makes the draft again.

    Every (kind, logical key) occurs once: the artifacts of two parts can be built apart without
    a logical-key conflict going unseen."""

    @abstractmethod
    def draft(self, index: int) -> Draft:
        """The draft at ``index`` (0 <= index < len)."""

    @abstractmethod
    def part(self, start: int, end: int) -> OnDemandDrafts:
        """The drafts from ``start`` to ``end`` (a slice of positions within bounds)."""

    @overload
    def __getitem__(self, index: int) -> Draft: ...
    @overload
    def __getitem__(self, index: slice) -> OnDemandDrafts: ...
    def __getitem__(self, index: int | slice) -> Draft | OnDemandDrafts:
        if isinstance(index, slice):
            start, end, step = index.indices(len(self))
            if step != 1:
                raise ValueError("on-demand drafts are sliced with step 1")
            return self.part(start, max(start, end))
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self.draft(index)

    def __iter__(self) -> Iterator[Draft]:
        for index in range(len(self)):
            yield self.draft(index)


@dataclass(frozen=True, slots=True)
class Extraction:
    """Everything one extractor produced for one commit: its drafts (a tuple, or
    ``OnDemandDrafts``) and gaps."""

    drafts: Sequence[Draft]
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
