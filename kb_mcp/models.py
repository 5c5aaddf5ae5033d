"""What the tools return: typed models, so every answer has an output schema and structured content.

A ``Unit`` is the export record of CONTRACT.md (exactly what ``kb export`` prints for it at that
commit) plus the fields every MCP answer carries: ``provenance`` (``file:start-end@sha``),
``freshness``, the commit it was read at and a one-line ``summary``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class Freshness(BaseModel):
    """Whether a unit still holds at the newest indexed commit of the branch."""

    status: Literal["current", "stale"] = Field(
        description="current: the same unit (same grounding, same content) is in the newest snapshot"
    )
    as_of: str | None = Field(description="the newest indexed commit of the branch, compared against")
    last_true_at: str | None = Field(description="the newest commit of the branch where this unit holds")


class ExtractorRef(BaseModel):
    """Which extractor (and version) made a unit."""

    id: str
    version: str


class GroundingEntry(BaseModel):
    """One code span a unit is grounded on, at the commit the unit was read at."""

    span_id: str
    file: str
    start_line: int
    end_line: int
    role: str


class Unit(BaseModel):
    """One knowledge unit: the export record plus provenance, freshness and a summary."""

    artifact_id: str
    kind: str
    logical_key: str
    method: str
    confidence: float
    summary: str = Field(description="one line for people and models")
    provenance: list[str] = Field(description="file:start-end@sha of every grounding span")
    freshness: Freshness
    sha: str = Field(description="the commit this unit was read at")
    extractor: ExtractorRef
    payload: dict[str, Any]
    grounding: list[GroundingEntry]


class Omitted(BaseModel):
    """What a token budget or page left out, per kind: nothing is dropped silently."""

    total: int = 0
    by_kind: dict[str, int] = Field(default_factory=dict)
    hint: str | None = None


class KnowledgeAnswer(BaseModel):
    """``get_knowledge``: units about a target, ranked, trimmed to the token budget."""

    target: str
    resolved_as: list[str] = Field(description="how the target was understood")
    sha: str
    matched: int = Field(description="how many units matched before trimming")
    token_budget: int
    tokens_used: int = Field(description="estimated cl100k tokens of this answer")
    units: list[Unit]
    omitted: Omitted


class SpanRef(BaseModel):
    """A code span over the asked line (innermost first)."""

    span_id: str
    kind: str
    fq_symbol_path: str
    start_line: int
    end_line: int
    provenance: str


class ProvenanceAnswer(BaseModel):
    """``find_provenance``: the spans over a line and the units derived from them."""

    file: str
    line: int
    sha: str
    spans: list[SpanRef]
    units: list[Unit]
    omitted: Omitted
    message: str | None = None


class SearchAnswer(BaseModel):
    """``search_knowledge``: semantically ranked units, or why semantic search is not available."""

    query: str
    sha: str
    status: Literal["ok", "embeddings_absent", "no_query_embedder"]
    ranking: Literal["semantic", "lexical"]
    message: str | None
    model: str | None = Field(default=None, description="the embedding model the ranking used")
    not_embedded: int = Field(
        default=0, description="units of this snapshot without a vector of that model (run `kb embed`)"
    )
    similarity: list[float] = Field(
        default_factory=list,
        description="semantic only: similarity[i] is the cosine similarity of units[i] to the query",
    )
    token_budget: int = 0
    tokens_used: int = Field(default=0, description="estimated cl100k tokens of this answer")
    units: list[Unit]
    omitted: Omitted


class ListItem(BaseModel):
    """One row of ``list_knowledge``: a logical key, its one-line summary and where it comes from."""

    artifact_id: str
    kind: str
    logical_key: str
    method: str
    confidence: float
    summary: str
    provenance: list[str]
    freshness: Freshness


class ListAnswer(BaseModel):
    """``list_knowledge``: one page of logical keys, in code point order."""

    sha: str
    kind: str | None
    prefix: str | None
    total: int = Field(description="how many units match, over all pages")
    items: list[ListItem]
    next_cursor: str | None = Field(description="pass back as cursor for the next page; null on the last")


class DiffUnit(BaseModel):
    """A unit of a knowledge diff: as ``kb diff --json`` prints it, plus freshness and summary."""

    artifact_id: str
    kind: str
    logical_key: str
    method: str
    confidence: float
    extractor: ExtractorRef
    payload: dict[str, Any]
    grounding: list[GroundingEntry]
    provenance: list[str]
    summary: str
    freshness: Freshness


class ChangedPair(BaseModel):
    """A unit whose kind and logical key stayed while its content or grounding changed."""

    before: DiffUnit
    after: DiffUnit


class KindChanges(BaseModel):
    """What changed within one kind."""

    added: list[DiffUnit]
    removed: list[DiffUnit]
    changed: list[ChangedPair]


class DiffAnswer(BaseModel):
    """``diff_knowledge``: ``kb diff --json`` (units trimmed to the budget, with ``omitted``)."""

    base: str
    head: str
    kinds: dict[str, KindChanges]
    totals: dict[str, int]
    omitted: Omitted
