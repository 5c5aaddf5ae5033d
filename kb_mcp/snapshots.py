"""One snapshot in memory, indexed for the tools: keys, subjects, grounding by file and span.

A published snapshot never changes, so it is loaded once per commit (``reads.load_snapshot``:
every record with its grounding lines; ~1 s and ~25 MB for Django) and every later request about
that commit resolves, ranks, pages and renders units without touching the database. A small LRU
bounds memory; loading holds a lock so concurrent first requests for a commit load it once.
"""

from __future__ import annotations

import bisect
import threading
from collections import OrderedDict, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field

import sqlalchemy as sa

from kb_mcp.subjects import is_test_path, subjects_of
from kb_mcp.summaries import summarize
from kb_resources.store import reads
from kb_resources.store.reads import ArtifactRecord

CACHED_SNAPSHOTS = 3
KIND_ORDER = (
    "description",
    "api_route",
    "entity",
    "event_handler",
    "process_path",
    "public_symbol",
    "decision",
    "call_edge",
    "import_edge",
)
"""Among equally relevant units, kinds that summarize more come first."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One unit of the snapshot: its record plus what finding, ranking and listing need."""

    artifact_id: str
    kind: str
    logical_key: str
    confidence: float
    record: ArtifactRecord
    summary: str
    subjects: tuple[str, ...]
    primary: str | None
    """The dotted path the unit is chiefly about (the left end of its key)."""
    in_tests: bool
    """Whether the unit's home module lives in test code (ranked after library code)."""
    order: tuple[bool, int, float, str, str]
    """The rank among equally relevant units: library code first, kind, confidence, key, id."""


@dataclass(frozen=True, slots=True)
class Grounded:
    """A unit grounded on a span of a file, with the span's qualified name."""

    artifact_id: str
    span_id: str
    fq_symbol_path: str


@dataclass
class SnapshotIndex:
    """The units and files of one published commit, indexed by key, subject, file and span."""

    sha: str
    entries: list[Entry]
    files: dict[str, str | None]
    """path -> module (None outside the import roots)."""
    grounded: dict[str, list[Grounded]]
    """path -> the units grounded on spans of that file."""
    keys: list[str] = field(init=False)
    by_id: dict[str, Entry] = field(init=False)
    by_key: dict[str, list[Entry]] = field(init=False)
    by_subject: dict[str, list[Entry]] = field(init=False)
    subjects: list[str] = field(init=False)
    modules: dict[str, str] = field(init=False)
    memo: dict[str, object] = field(init=False, default_factory=dict)
    """Derived structures other modules build lazily (e.g. the keyword index)."""

    def __post_init__(self) -> None:
        self.keys = [e.logical_key for e in self.entries]
        self.by_id = {e.artifact_id: e for e in self.entries}
        self.by_key = defaultdict(list)
        self.by_subject = defaultdict(list)
        for e in self.entries:
            self.by_key[e.logical_key].append(e)
            for subject in e.subjects:
                self.by_subject[subject].append(e)
        self.subjects = sorted(self.by_subject)
        self.modules = {module: path for path, module in sorted(self.files.items()) if module}

    def counts(self) -> dict[str, int]:
        """How many units of each kind."""
        out: dict[str, int] = defaultdict(int)
        for e in self.entries:
            out[e.kind] += 1
        return dict(sorted(out.items()))

    def subjects_under(self, dotted: str) -> Iterator[str]:
        """Subjects strictly inside ``dotted`` (``dotted.x``, ``dotted.x.y``), in order."""
        prefix = dotted + "."
        i = bisect.bisect_left(self.subjects, prefix)
        while i < len(self.subjects) and self.subjects[i].startswith(prefix):
            yield self.subjects[i]
            i += 1

    def module_of(self, dotted: str) -> tuple[str, str] | None:
        """The longest module that ``dotted`` starts with, and the rest (``''`` for the module)."""
        parts = dotted.split(".")
        for n in range(len(parts), 0, -1):
            module = ".".join(parts[:n])
            if module in self.modules:
                return module, ".".join(parts[n:])
        return None


def build_index(conn: sa.Connection, sha: str) -> SnapshotIndex:
    """Load the snapshot of ``sha`` and index it."""
    loaded = reads.load_snapshot(conn, sha)
    files = {f.path: f.module for f in reads.commit_files(conn, sha)}
    modules = {module: path for path, module in files.items() if module}
    entries = []
    grounded: dict[str, list[Grounded]] = defaultdict(list)
    for rec in loaded.records:
        subjects, primary = subjects_of(rec.logical_key, rec.payload)
        home = _home(primary, modules)
        summary = summarize(rec.kind, rec.logical_key, rec.payload)
        in_tests = home is not None and is_test_path(home)
        order = (in_tests, _kind_rank(rec.kind), -rec.confidence, rec.logical_key, rec.artifact_id)
        entry = Entry(
            rec.artifact_id,
            rec.kind,
            rec.logical_key,
            rec.confidence,
            rec,
            summary,
            subjects,
            primary,
            in_tests,
            order,
        )
        entries.append(entry)
        for edge in {(g.path, g.span_id) for g in rec.grounding}:
            name = loaded.spans.get(edge[1])
            grounded[edge[0]].append(Grounded(rec.artifact_id, edge[1], name.fq_symbol_path if name else ""))
    return SnapshotIndex(sha, entries, files, dict(grounded))


def _kind_rank(kind: str) -> int:
    """Position of ``kind`` in ``KIND_ORDER`` (unknown kinds last)."""
    return KIND_ORDER.index(kind) if kind in KIND_ORDER else len(KIND_ORDER)


def _home(primary: str | None, modules: dict[str, str]) -> str | None:
    """The file of the longest module that ``primary`` starts with."""
    parts = primary.split(".") if primary else []
    for n in range(len(parts), 0, -1):
        path = modules.get(".".join(parts[:n]))
        if path is not None:
            return path
    return None


class SnapshotCache:
    """The indexes of the most recently used commits (thread-safe; each loaded at most once)."""

    def __init__(self, size: int = CACHED_SNAPSHOTS) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._indexes: OrderedDict[str, SnapshotIndex] = OrderedDict()

    def get(self, conn: sa.Connection, sha: str) -> SnapshotIndex:
        """The index of the published snapshot of ``sha``."""
        with self._lock:
            index = self._indexes.get(sha)
            if index is None:
                index = build_index(conn, sha)
                self._indexes[sha] = index
                while len(self._indexes) > self._size:
                    self._indexes.popitem(last=False)
            self._indexes.move_to_end(sha)
            return index
