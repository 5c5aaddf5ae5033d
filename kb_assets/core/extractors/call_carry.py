"""Call edges carried from one commit to the next: an edge that did not change is known by its id
instead of drafted and hashed again.

A call edge's draft, and so its artifact id, is a function of the edge's own fields (caller and
callee dotted paths, the caller's span, forms, site offsets, the callee's spans, the ``via`` spans)
and of the span ids at those (path, ordinal) places, which only change with the file's blob. So an
edge of the new commit whose fields equal the remembered edge's, and none of whose spans lies in
a file whose blob differs, has the remembered id, byte for byte. On a one-file Django commit that
is all but a few dozen of 75,908 edges; drafting and hashing them was ~2 s of the commit's run.

Only ids are carried, not artifacts: the writer must find them stored before it stages them
(``kb_assets.indexing.extract``), since the carry may come from another store. The call graph
itself is still resolved in full: which edges a change reaches is only known after resolving.
Where a carry is kept between commits (in memory, in a file) is ``kb_assets.indexing.carries``.
"""

from __future__ import annotations

import hashlib
import marshal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kb_assets.core.callgraph.graph import CallGraph, Edge, call_graph, paused_gc
from kb_assets.core.callgraph.values import Span
from kb_assets.core.extractors.base import Extraction
from kb_assets.core.extractors.calls import edge_drafts
from kb_assets.core.program import Program

EdgeKey = tuple[str, str]
Signature = bytes
"""A 128-bit digest of every field of an ``Edge`` its draft reads, but the (caller, callee) key:
compact enough to keep for a whole commit (Django: 75,908 edges) and to store between processes."""

FORMAT = "2"
"""Version of ``EdgeCarry.dump``'s bytes and of the signature rule; checked by ``load``."""


def signature(edge: Edge, vias: dict[frozenset[Span], str]) -> Signature:
    """What the edge's draft is made of, digested (``vias``: each shared ``via`` set's sorted text,
    made once). Offsets are kept in site order: an equal set in another order is only a missed
    reuse, never a wrong one. ``repr`` of str, int, list, tuple and None is the same in every
    process; a set's is not, hence the sort."""
    via = vias.get(edge.via)
    if via is None:
        via = vias[edge.via] = repr(sorted(edge.via))
    caller = edge.caller
    text = repr((caller.path, caller.span, edge.forms, edge.offsets, edge.others, edge.callee_spans)) + via
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


@dataclass(frozen=True, slots=True)
class Carried:
    """A commit's call edges against the carry: drafts for the new ones, ids for the rest."""

    extraction: Extraction
    reused: tuple[str, ...]
    """Artifact ids of the edges unchanged since the remembered commit."""


Entry = tuple[EdgeKey, Signature, str]
"""One remembered edge: its key, its signature, its artifact id."""
_Resolved = tuple[EdgeKey, Signature | None, str | None]
"""One edge of the commit being indexed: its signature if already made, its id if reused."""


class EdgeCarry:
    """The call edges of the last commit whose staging this process finished, by (caller, callee).

    Remembered as the list the resolution made (no second copy at the end of a run, when the
    index's memory peaks), turned into a lookup on the next ``resolve``."""

    def __init__(self) -> None:
        self._blobs: Mapping[str, str] = {}
        self._entries: list[Entry] = []
        self._known: dict[EdgeKey, tuple[Signature, str]] = {}
        self._pending: tuple[Program, CallGraph, list[_Resolved]] | None = None

    def resolve(self, program: Program) -> Carried:
        """The call-edge extraction of ``program``, reusing what the remembered commit proves."""
        self._pending = None
        if self._entries:
            self._known = {key: (sig, artifact_id) for key, sig, artifact_id in self._entries}
            self._entries = []
        with paused_gc():
            graph = call_graph(program)
            changed = _changed_paths(self._blobs, program)
            touched: dict[frozenset[Span], bool] = {}
            vias: dict[frozenset[Span], str] = {}
            entries: list[_Resolved] = []
            fresh: list[EdgeKey] = []
            reused: list[str] = []
            for key in sorted(graph.edges):
                known = self._known.get(key)
                if known is None:  # signed once the drafts are gone (``remember``): the run's peak
                    fresh.append(key)
                    entries.append((key, None, None))
                    continue
                edge = graph.edges[key]
                sig = signature(edge, vias)
                if known[0] == sig and not _touches(edge, changed, touched):
                    reused.append(known[1])
                    entries.append((key, sig, known[1]))
                else:
                    fresh.append(key)
                    entries.append((key, sig, None))
            drafts = edge_drafts(program, graph, fresh)
        self._known = {}
        self._pending = (program, graph, entries)
        return Carried(Extraction(drafts=drafts, gaps=tuple(graph.gaps)), tuple(reused))

    def remember(self, program: Program, drafted: Sequence[str]) -> None:
        """The commit's edges are staged: remember them for the next commit. ``drafted``: the ids
        of the drafted edges, in draft order (one artifact per draft; any other count means the
        run is not the one resolved, and nothing is remembered)."""
        pending, self._pending = self._pending, None
        if pending is None or pending[0] is not program:
            self.forget()
            return
        _, graph, resolved = pending
        ids = iter(drafted)
        vias: dict[frozenset[Span], str] = {}
        entries: list[Entry] = []
        for key, sig, artifact_id in resolved:
            found = artifact_id if artifact_id is not None else next(ids, None)
            if found is None:
                self.forget()
                return
            entries.append((key, sig if sig is not None else signature(graph.edges[key], vias), found))
        if next(ids, None) is not None:
            self.forget()
            return
        self._entries, self._known = entries, {}
        self._blobs = {path: source.blob_id for path, source in program.files.items()}

    def forget(self) -> None:
        """Remember nothing (the next commit drafts every edge)."""
        self._blobs, self._entries, self._known, self._pending = {}, [], {}, None

    def dump(self, stamp: str) -> bytes:
        """The remembered commit as bytes ``load`` reads back in another process; ``stamp`` names
        everything the ids depend on besides the edges (parser and extractor versions)."""
        entries = self._entries or [(key, sig, found) for key, (sig, found) in self._known.items()]
        return marshal.dumps((FORMAT, stamp, dict(self._blobs), entries))

    @classmethod
    def load(cls, data: bytes, stamp: str) -> EdgeCarry:
        """A carry from ``dump``'s bytes; empty unless they are readable, of this format and made
        under the same ``stamp``."""
        carry = cls()
        try:
            version, made_under, blobs, entries = marshal.loads(data)  # noqa: S302 - knowbase's own file
        except (EOFError, ValueError, TypeError):
            return carry
        if (version, made_under) == (FORMAT, stamp) and isinstance(blobs, dict) and isinstance(entries, list):
            carry._blobs, carry._entries = blobs, entries
        return carry


def _changed_paths(blobs: Mapping[str, str], program: Program) -> frozenset[str]:
    """Paths whose blob differs between the remembered commit and ``program`` (or exist in one)."""
    files = program.files
    changed = {path for path, source in files.items() if blobs.get(path) != source.blob_id}
    changed.update(path for path in blobs if path not in files)
    return frozenset(changed)


def _touches(edge: Edge, changed: frozenset[str], touched: dict[frozenset[Span], bool]) -> bool:
    """Whether any span the edge's draft reads lies in a changed file (``touched``: per ``via`` set,
    which thousands of edges share)."""
    if not changed:
        return False
    if edge.caller.path in changed or any(path in changed for path, _ in edge.callee_spans):
        return True
    if edge.others is not None and any(path in changed for path, _, _ in edge.others):
        return True
    via = edge.via
    hit = touched.get(via)
    if hit is None:
        hit = touched[via] = any(path in changed for path, _ in via)
    return hit
