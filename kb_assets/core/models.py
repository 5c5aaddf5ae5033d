"""Plain, frozen data that flows between the pure core and the shells around it.

Nothing here knows about Dagster, SQL or git; every record is hashable and cheap to pickle so it
can cross process boundaries (parallel parsing) unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

JSON = Any
"""A JSON-compatible value (dict/list/str/int/float/bool/None); kept loose on purpose."""


class SpanKind(StrEnum):
    """What a code span is; part of the span's identity."""

    MODULE = "module"
    CLASS = "class"
    FUNCTION = "function"
    IMPORT = "import"
    ASSIGNMENT = "assignment"


class FileMode(StrEnum):
    """How git stores a path; only regular files are ever read."""

    REGULAR = "regular"
    EXECUTABLE = "executable"
    SYMLINK = "symlink"
    SUBMODULE = "submodule"


READABLE_MODES = frozenset({FileMode.REGULAR, FileMode.EXECUTABLE})
"""The modes whose blobs are read and parsed (a ``FileMode`` is its string value too)."""


class Method(StrEnum):
    """How an artifact was produced."""

    DETERMINISTIC = "deterministic"
    LLM_GROUNDED = "llm_grounded"


@dataclass(frozen=True, slots=True)
class Span:
    """A definition, import or assignment inside one blob, with its position in that blob."""

    span_id: str
    kind: SpanKind
    fq_symbol_path: str
    start_line: int
    end_line: int


@dataclass(frozen=True, slots=True)
class Gap:
    """Something knowbase did not understand, recorded instead of silently skipped."""

    path: str
    reason: str
    detail: str
    line: int | None = None
    source: str = "parse"


@dataclass(frozen=True, slots=True)
class FileEntry:
    """One path of a commit's tree that knowbase considers (a `.py` path)."""

    path: str
    blob_id: str
    mode: FileMode
    size: int


@dataclass(frozen=True, slots=True)
class ParsedBlob:
    """Everything the one parse of a blob yields: its spans, per-extractor facts and gaps.

    Gaps here carry an empty ``path`` because a blob can live at many paths; callers attach it.
    """

    blob_id: str
    spans: tuple[Span, ...]
    facts: Mapping[str, JSON] = field(default_factory=dict)
    gaps: tuple[Gap, ...] = ()
    line_count: int = 0


@dataclass(frozen=True, slots=True)
class EncodedBlob:
    """A ``ParsedBlob`` as the cache stores it: its facts already encoded to bytes.

    Parse workers return this rather than the facts themselves, so the parent process never holds
    the decoded facts of a whole commit at once (Django: 2.4 million small objects, about 150 MiB).
    """

    blob_id: str
    spans: tuple[Span, ...]
    facts: bytes
    gaps: tuple[Gap, ...] = ()
    line_count: int = 0


@dataclass(frozen=True, slots=True)
class Occurrence:
    """A span at a path of one commit: the unit that provenance names."""

    path: str
    span_id: str
    kind: SpanKind
    fq_symbol_path: str
    start_line: int
    end_line: int


@dataclass(frozen=True, slots=True, order=True)
class Grounding:
    """One grounding edge of an artifact: which span occurrence, at which path, in what role."""

    span_id: str
    path: str
    role: str


@dataclass(frozen=True, slots=True)
class Artifact:
    """A unit of knowledge, content-addressed and grounded on at least one span occurrence.

    ``payload`` is location-free: line numbers that only depend on where a span sits in its file
    are derived at read time from the commit's occurrences, so that inserting a blank line above
    a definition does not change the identity of what is known about it.
    """

    artifact_id: str
    kind: str
    logical_key: str
    extractor_id: str
    extractor_version: str
    method: Method
    confidence: float
    payload: Mapping[str, JSON]
    grounding: tuple[Grounding, ...]
    prompt_version: str | None = None
    model_id: str | None = None
    payload_json: str | None = field(default=None, compare=False, repr=False)
    """``canonical_json(payload)``, when the builder made it for the id: the store's row takes it
    as it is instead of encoding the payload a second time (Django's 88k payloads: 0.20 s)."""
