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

from kb_assets.core.collector import paused_gc
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
    blobs: dict[str, str] = field(default_factory=dict)
    """path -> blob id: what tells a later commit's index which files changed."""
    located_with: str | None = None
    """The parser version whose spans place the grounding lines."""
    loaded: int = 0
    """How many records were read from the store to build this index (the rest were reused)."""
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


def build_index(conn: sa.Connection, sha: str, previous: SnapshotIndex | None = None) -> SnapshotIndex:
    """Load the snapshot of ``sha`` and index it, reusing what ``previous`` (another commit's index)
    already holds (``_build_index``), with the cyclic garbage collector paused (``paused_gc``): the
    index is ~90k entries and their records on Django, and the collections their allocations
    still set off under knowbase's thresholds (``tune_collector``: ~30 young ones) examined them
    again and again (indexing Django's newest snapshot for a first question: 5.0 s, 4.3-4.5 s
    paused)."""
    with paused_gc():
        return _build_index(conn, sha, previous)


def _build_index(conn: sa.Connection, sha: str, previous: SnapshotIndex | None) -> SnapshotIndex:
    """``build_index``'s work.

    A unit of ``previous`` is reused as it is when it is in the new snapshot (same id: same
    payload, same grounding paths and roles) and every file it is grounded in has the same blob
    in both commits (so the same lines), the two commits have the same files and modules (so the
    same test/library ranking) and place lines with the same parser version. For a commit that
    changed a few files this reads a few hundred records instead of the whole snapshot (88k records
    and ~7 s for Django); the result is the index a full load builds (tests compare the two).
    """
    files_at = reads.commit_files(conn, sha)
    files = {f.path: f.module for f in files_at}
    blobs = {f.path: f.blob_id for f in files_at}
    located_with = reads.snapshot_parser_version(conn, sha)
    reused: dict[str, Entry] = {}
    if previous is not None and previous.files == files and previous.located_with == located_with:
        changed = {path for path, blob in blobs.items() if previous.blobs.get(path) != blob}
        ids = reads.snapshot_artifact_ids(conn, sha)
        for artifact_id in ids:
            entry = previous.by_id.get(artifact_id)
            if entry is not None and not any(g.path in changed for g in entry.record.grounding):
                reused[artifact_id] = entry
        wanted: set[str] | None = set(ids) - reused.keys()
    else:
        wanted = None
    loaded = reads.load_snapshot(conn, sha, only=wanted)
    names: dict[str, str] = {}
    if previous is not None and reused:  # the reused units' span names, as ``previous`` placed them
        names = {g.span_id: g.fq_symbol_path for edges in previous.grounded.values() for g in edges}
    names.update((span_id, name.fq_symbol_path) for span_id, name in loaded.spans.items())
    modules = {module: path for path, module in files.items() if module}
    entries = [*reused.values(), *(_entry(rec, modules) for rec in loaded.records)]
    entries.sort(key=lambda e: (e.logical_key, e.kind, e.artifact_id))
    grounded: dict[str, list[Grounded]] = defaultdict(list)
    for entry in entries:
        for path, span_id in {(g.path, g.span_id) for g in entry.record.grounding}:
            grounded[path].append(Grounded(entry.artifact_id, span_id, names.get(span_id, "")))
    loaded_count = len(loaded.records)
    return SnapshotIndex(
        sha, entries, files, dict(grounded), blobs=blobs, located_with=located_with, loaded=loaded_count
    )


def _entry(rec: ArtifactRecord, modules: dict[str, str]) -> Entry:
    """A record with what finding, ranking and listing need."""
    subjects, primary = subjects_of(rec.logical_key, rec.payload)
    home = _home(primary, modules)
    in_tests = home is not None and is_test_path(home)
    order = (in_tests, _kind_rank(rec.kind), -rec.confidence, rec.logical_key, rec.artifact_id)
    summary = summarize(rec.kind, rec.logical_key, rec.payload)
    return Entry(
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
                # The most recently used commit is most often the one this commit follows.
                previous = next(reversed(self._indexes.values()), None)
                index = build_index(conn, sha, previous)
                self._indexes[sha] = index
                while len(self._indexes) > self._size:
                    self._indexes.popitem(last=False)
            self._indexes.move_to_end(sha)
            return index
