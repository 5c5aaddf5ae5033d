"""Call edges carried from one commit to the next: an edge that did not change is known by its id
instead of drafted and hashed again.

A call edge's draft, and so its artifact id, is a function of the edge's own fields (caller and
callee dotted paths, the caller's span, forms, site offsets, the callee's spans, the ``via`` spans)
and of the span ids at those (path, ordinal) places, which only change with the file's blob. So an
edge of the new commit whose fields equal the remembered edge's, and none of whose spans lies in
a file whose blob differs, has the remembered id, byte for byte. On a one-file Django commit that
is all but a few dozen of 75,908 edges; drafting and hashing them was ~2 s of the commit's run.

Only ids are carried, not artifacts: the writer must find them stored before it stages them
(``kb_assets.indexing.extract``), since the carry may come from another store. When the call graph
was built from the resolutions of the very commit the carry remembers (``kb watch``), its edges
outside ``CallGraph.changed`` are that commit's, field for field: their remembered signatures are
taken as they are instead of being made again (~0.4 s on Django).
Where a carry is kept between commits (in memory, in a file) is ``kb_assets.indexing.carries``.
"""

from __future__ import annotations

import hashlib
import marshal
from bisect import bisect_left
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import BinaryIO, cast

from kb_assets.core.callgraph.graph import CallGraph, Edge, call_graph
from kb_assets.core.callgraph.values import FORMS, Span
from kb_assets.core.collector import paused_gc
from kb_assets.core.extractors.base import Extraction
from kb_assets.core.extractors.calls import CallsExtractor, EdgeDrafts
from kb_assets.core.extractors.edge_delta import (
    SIGNATURE_BYTES,
    UNSIGNED,
    EdgeKey,
    splice,
    touches,
    touching,
    without,
)
from kb_assets.core.extractors.registry import parser_version
from kb_assets.core.ids import ARTIFACT_ID_VERSION
from kb_assets.core.program import Program

Signature = bytes
"""A 128-bit digest of every field of an ``Edge`` its draft reads, but the (caller, callee) key:
compact enough to keep for a whole commit (Django: 75,908 edges) and to store between processes."""

FORMAT = "6"
"""Version of ``EdgeCarry.dump``'s records and of the signature rule (part of ``stamp``). 6: the
header names the remembered commit."""


def stamp() -> str:
    """Everything a carried id depends on besides an edge's fields and its files' blobs: the
    carry's format, the parser (a span is named by its ordinal), the calls extractor, the id rule,
    and the forms' names (a signature holds their bit mask). ``load`` refuses another stamp."""
    versions = f"format {FORMAT}; parser {parser_version()}; calls {CallsExtractor.version}"
    return f"{versions}; ids {ARTIFACT_ID_VERSION}; forms {','.join(FORMS)}"


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
    """Artifact ids of the edges unchanged since the remembered commit; sorted when the commit was
    carried as a delta (``edge_delta``), so that sorting them with the drafted ones for staging
    is a merge."""
    resolved: int | None = None
    """Files whose scopes the call graph resolved again from the last commit's resolutions
    (``CallGraph.resolved``; None: every file was resolved)."""


DUMP_EDGES = 4096
"""Edges per record of ``EdgeCarry.dump`` (~0.5 MB each)."""


@dataclass(slots=True)
class _Resolving:
    """The commit being indexed, between ``resolve`` and ``remember``: its edge keys in draft
    order, with the remembered id of each reused edge (None: drafted) and every signature
    (``UNSIGNED`` at the ``unsigned`` positions: made in ``settle``), and the positions of the
    drafted edges."""

    program: Program
    graph: CallGraph
    keys: list[EdgeKey]
    ids: list[str | None]
    signatures: bytearray
    fresh: list[int]
    unsigned: list[int]
    dropped: list[str] | None = None
    """The remembered ids not reused, when resolved as a delta (``_replayed``): those of the edges
    gone and of those drafted again."""


class EdgeCarry:
    """The call edges of the last commit whose staging this process finished: keys, signatures
    and ids in three parallel sequences (the signatures in one ``bytes``), not a tuple and a
    ``bytes`` object per edge. A full index remembers all 75,908 of Django's edges at the end of
    its ``call_edges`` step, and small objects made there would stay in the run's memory.

    ``remember`` only notes the staged commit; packing it into those sequences waits for
    ``settle`` (called by ``dump``, ``remembered`` and ``resolve``), and indexing its keys (and
    which edges read each file: ``edge_delta.touching``) for the next ``resolve`` for
    ``prepare``: ``kb watch`` does both once the round's commits are published, when it writes
    the carry's file, instead of on each commit's way to its snapshot (~0.05 s each on a warm
    Django commit, and ~0.1 s for the files' index)."""

    def __init__(self) -> None:
        self._sha: str | None = None
        self._blobs: Mapping[str, str] = {}
        self._keys: list[EdgeKey] = []
        self._signatures = b""
        self._ids: list[str] = []
        self._pending: _Resolving | None = None
        self._unsettled: tuple[_Resolving, Sequence[str]] | None = None
        self._at: dict[EdgeKey, int] | None = None
        self._edges: Mapping[EdgeKey, Edge] | None = None
        """The remembered commit's edges, when this process built them (not read from a file)."""
        self._touching: dict[str, list[EdgeKey]] | None = None
        self._sorted: list[str] | None = None
        """The remembered ids, sorted (``_sorted_ids``)."""

    @property
    def remembers(self) -> bool:
        """Whether it remembers a commit (whose edges the next commit's then mostly are)."""
        return bool(self._blobs)

    @property
    def remembered(self) -> tuple[str, Sequence[str]] | None:
        """The commit it remembers and the ids of that commit's edges (None: no commit), for a
        run to ask whether its store staged exactly those there."""
        self.settle()
        return (self._sha, self._ids) if self._sha is not None and self._blobs else None

    def resolve(self, program: Program) -> Carried:
        """The call-edge extraction of ``program``, reusing what the remembered commit proves:
        as a delta of its edges when the graph was replayed from it and this process built them
        (``edge_delta``), else looking at every edge."""
        self._pending = None
        at = self._index()
        with paused_gc():
            graph = call_graph(program)
            changed = _changed_paths(self._blobs, program)
            replayed = graph.since is not None and graph.since == self._sha
            if replayed and self._edges is not None:
                pending = self._replayed(program, graph, at, changed)
            else:
                pending = self._looked_at(program, graph, at, changed, replayed=replayed)
            drafts = EdgeDrafts(program, graph, [pending.keys[n] for n in pending.fresh])
        self._pending = pending
        if pending.dropped is None:
            reused = tuple(filter(None, pending.ids))
        else:  # the remembered ids sorted (made while the watch waited), the dropped cut out
            reused = without(self._sorted_ids(), pending.dropped)
        return Carried(Extraction(drafts=drafts, gaps=tuple(graph.gaps)), reused, graph.resolved)

    def _looked_at(
        self,
        program: Program,
        graph: CallGraph,
        at: Mapping[EdgeKey, int],
        changed: frozenset[str],
        *,
        replayed: bool,
    ) -> _Resolving:
        """Every edge compared with the remembered one: its signature (taken as remembered when
        the graph was ``replayed`` from that commit and vouches for the edge) and its spans."""
        remembered, ids = self._signatures, self._ids
        touched: dict[frozenset[Span], bool] = {}
        vias: dict[frozenset[Span], str] = {}
        keys = sorted(graph.edges)
        pending = _Resolving(program, graph, keys, [], bytearray(), [], [])
        for pos, key in enumerate(keys):
            n = at.get(key)
            if n is None:  # signed once the drafts are gone (``settle``): the run's peak
                pending.fresh.append(pos)
                pending.unsigned.append(pos)
                pending.ids.append(None)
                pending.signatures += UNSIGNED
                continue
            edge = graph.edges[key]
            sig = remembered[n * SIGNATURE_BYTES : (n + 1) * SIGNATURE_BYTES]
            if replayed and key not in graph.changed:
                holds = not touches(edge, changed, touched)
            else:
                sig, holds = _compared(edge, sig, changed, touched, vias)
            if holds:
                pending.ids.append(ids[n])
            else:
                pending.fresh.append(pos)
                pending.ids.append(None)
            pending.signatures += sig
        return pending

    def _replayed(
        self, program: Program, graph: CallGraph, at: Mapping[EdgeKey, int], changed: frozenset[str]
    ) -> _Resolving:
        """The remembered sequences with the graph's keys spliced in (``edge_delta.splice``); only
        the edges ``graph.changed`` names, and those that read a span in a ``changed`` file (the
        remembered edges, indexed by file: ``edge_delta.touching``), are looked at."""
        spliced = splice(self._keys, self._ids, self._signatures, at, graph.edges)
        keys, ids, signatures = spliced.keys, spliced.ids, spliced.signatures
        index = self._index_files()
        suspects = set(graph.changed)
        for path in changed:
            suspects.update(index.get(path, ()))
        fresh = set(spliced.added)
        dropped = [self._ids[n] for n in spliced.gone]
        touched: dict[frozenset[Span], bool] = {}
        vias: dict[frozenset[Span], str] = {}
        for key in sorted(suspects):
            pos = bisect_left(keys, key)
            if pos == len(keys) or keys[pos] != key or ids[pos] is None:
                continue  # an edge gone, or one added (drafted already)
            if key in graph.changed:
                place = slice(pos * SIGNATURE_BYTES, (pos + 1) * SIGNATURE_BYTES)
                signatures[place], holds = _compared(
                    graph.edges[key], bytes(signatures[place]), changed, touched, vias
                )
                if holds:
                    continue
            dropped.append(ids[pos])  # type: ignore[arg-type]  # not None: tested above
            ids[pos] = None
            fresh.add(pos)
        return _Resolving(program, graph, keys, ids, signatures, sorted(fresh), spliced.added, dropped)

    def remember(self, program: Program, drafted: Sequence[str]) -> None:
        """The commit's edges are staged: remember them for the next commit. ``drafted``: the ids
        of the drafted edges, in draft order (one artifact per draft; any other count means the
        run is not the one resolved, and nothing is remembered). They are packed by ``settle``."""
        pending, self._pending = self._pending, None
        if pending is None or pending.program is not program or len(drafted) != len(pending.fresh):
            self.forget()
            return
        self._unsettled = (pending, drafted)
        self._blobs = {path: source.blob_id for path, source in program.files.items()}
        self._sha = program.sha

    def settle(self) -> None:
        """Pack the commit ``remember`` noted: the drafted edges' ids in their places, and their
        signatures (made now, once their drafts are gone: the run's peak)."""
        if self._unsettled is None:
            return
        pending, drafted = self._unsettled
        self._unsettled = None
        ids, signatures, keys, edges = pending.ids, pending.signatures, pending.keys, pending.graph.edges
        for pos, made in zip(pending.fresh, drafted, strict=True):
            ids[pos] = made
        vias: dict[frozenset[Span], str] = {}
        for pos in pending.unsigned:
            signatures[pos * SIGNATURE_BYTES : (pos + 1) * SIGNATURE_BYTES] = signature(
                edges[keys[pos]], vias
            )
        if keys is not self._keys:
            self._at = None
        self._keys, self._signatures, self._ids = keys, bytes(signatures), cast("list[str]", ids)
        self._edges, self._touching, self._sorted = edges, None, None

    def prepare(self) -> None:
        """Settle, and index the keys and files and sort the ids for the next ``resolve`` now (a
        process that has the time)."""
        self._index()
        self._index_files()
        if self._edges is not None:  # only a delta (``_replayed``) reads them
            self._sorted_ids()

    def _sorted_ids(self) -> list[str]:
        """The remembered ids, sorted (made once per remembered commit)."""
        self.settle()
        if self._sorted is None:
            self._sorted = sorted(self._ids)
        return self._sorted

    def _index(self) -> dict[EdgeKey, int]:
        """Where each remembered edge is in the three sequences (made once per remembered commit)."""
        self.settle()
        if self._at is None:
            self._at = {key: n for n, key in enumerate(self._keys)}
        return self._at

    def _index_files(self) -> dict[str, list[EdgeKey]]:
        """Which remembered edges read a span in each file (made once per remembered commit; none
        for a carry read from a file, which has no edges)."""
        self.settle()
        if self._touching is None:
            self._touching = touching(self._edges) if self._edges is not None else {}
        return self._touching

    def forget(self) -> None:
        """Remember nothing (the next commit drafts every edge)."""
        self._blobs, self._keys, self._signatures, self._ids, self._pending = {}, [], b"", [], None
        self._sha, self._unsettled, self._at, self._edges, self._touching = None, None, None, None, None
        self._sorted = None

    def dump(self) -> Iterator[bytes]:
        """The remembered commit as the records ``load`` reads back in another process: a header
        (``stamp``, the commit, the blobs, the edge count), then ``DUMP_EDGES`` edges per record.
        One ~9 MB record for Django, made at the end of a full index's ``call_edges`` step, stayed
        in the run's memory (+12 MiB at its peak).

        The commit travels too: a graph replayed from that commit's resolutions (``CallGraph.since``)
        vouches for its unchanged edges' signatures, which ``resolve`` then takes from the carry
        instead of making them again (before format 6 a carry read from the file had no commit,
        and a cold ``kb index`` signed all of Django's 75,908 edges: ~0.26 s)."""
        self.settle()
        yield marshal.dumps((stamp(), self._sha, dict(self._blobs), len(self._keys)))
        for start in range(0, len(self._keys), DUMP_EDGES):
            end = start + DUMP_EDGES
            part = self._signatures[start * SIGNATURE_BYTES : end * SIGNATURE_BYTES]
            yield marshal.dumps((self._keys[start:end], part, self._ids[start:end]))

    @classmethod
    def load(cls, stream: BinaryIO) -> EdgeCarry:
        """A carry from ``dump``'s records; empty unless they are readable, made under this
        ``stamp`` and consistent."""
        carry = cls()
        try:
            made_under, sha, blobs, count = marshal.load(stream)  # noqa: S302 - our own file
            if made_under != stamp() or not isinstance(sha, str) or not isinstance(blobs, dict):
                return carry
            keys: list[EdgeKey] = []
            signatures = bytearray()
            ids: list[str] = []
            while len(keys) < count:
                part_keys, part_signatures, part_ids = marshal.load(stream)  # noqa: S302
                keys += part_keys
                signatures += part_signatures
                ids += part_ids
        except (EOFError, ValueError, TypeError):
            return carry
        if len(signatures) == SIGNATURE_BYTES * count and len(keys) == len(ids) == count:
            carry._blobs, carry._keys, carry._signatures, carry._ids = blobs, keys, bytes(signatures), ids
            carry._sha = sha
        return carry


def _changed_paths(blobs: Mapping[str, str], program: Program) -> frozenset[str]:
    """Paths whose blob differs between the remembered commit and ``program`` (or exist in one)."""
    files = program.files
    changed = {path for path, source in files.items() if blobs.get(path) != source.blob_id}
    changed.update(path for path in blobs if path not in files)
    return frozenset(changed)


def _compared(
    edge: Edge,
    remembered: bytes,
    changed: frozenset[str],
    touched: dict[frozenset[Span], bool],
    vias: dict[frozenset[Span], str],
) -> tuple[Signature, bool]:
    """The edge's signature, and whether the remembered edge's id still holds for it: the same
    signature as ``remembered``, and no span it reads in a ``changed`` file (``touched`` and
    ``vias``: the per-``via``-set memos of ``touches`` and ``signature``)."""
    sig = signature(edge, vias)
    return sig, sig == remembered and not touches(edge, changed, touched)
