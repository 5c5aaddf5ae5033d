"""Blobs' facts decoded in a thread while the parse step runs, for the program load after it.

The program load at the start of the call-edge step decodes the facts of every blob of the
commit it does not keep from an earlier load: on a full index, those the parse has just written
(Django: 2,823 blobs, ~0.4 s of one core); in a process's first load of an incremental commit (a
cold ``kb index``), the cached parses read back from the store (~0.9 s). Meanwhile the parse step
writes, refreshes statistics and digests the occurrences, and the parse's checks run, this
process mostly waiting for the server (a full Django index: ~1.05 of the two cores busy from the
workers' end to the call graph's copies). So the decoding is handed to a thread: the parse's own
blobs as soon as the workers have returned the last batch (``start``), the cached ones the load
would read as the step begins (``start_reading``, from ``parse.ensure_parsed``); the load takes
what they decoded (``take``). What the load decoded stays for the next load (``kept``), which
then reads and decodes only the blobs a commit changed: nothing is read ahead for it.

Only for a run that executes every step in this process (``prefetch.active``: ``kb index``,
``kb watch``): a step process of a multiprocess run would decode for nobody. No fork happens
while a thread runs: ``forked`` waits for it first (``forked.settle_before_fork``), since a copy
made beside a running thread could inherit a lock it holds. A decoding that fails leaves nothing
to take, and the load decodes those blobs itself, meeting the same error if it is real.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence

from sqlalchemy import Engine

from kb_assets.core import forked
from kb_assets.core.blobs import decode_facts
from kb_assets.core.extractors.registry import parser_version
from kb_assets.core.models import JSON, EncodedBlob, Span
from kb_assets.indexing import prefetch
from kb_assets.indexing.last_blobs import LastBlobs
from kb_assets.indexing.parallel import worker_count
from kb_resources.store import reads

Loaded = tuple[tuple[Span, ...], dict[str, JSON]]
"""A blob's spans and decoded facts, as the program load keeps them (``load._blobs``)."""

kept: LastBlobs[Loaded] = LastBlobs()
"""The spans and decoded facts of the last program's blobs, which the load keeps for the next
(``load._load_blobs``): a process holding them (``kb watch`` after its first commit) reads
nothing ahead."""

PREDECODE_MIN_BLOBS = 200
"""Fewer blobs than this are decoded by the load itself (a few ms): a thread for them would only
be one more thing running beside the step (a warm ``kb watch`` keeps all but a commit's few)."""


Source = Callable[[], Iterable[tuple[str, tuple[Span, ...], bytes]]]
"""Where a decoding's blobs come from: (blob id, spans, encoded facts) of each."""


class _Decoding:
    """One thread decoding blobs, and what it decoded, for one store and parser."""

    def __init__(self, scope: tuple[str, str], source: Source) -> None:
        self.scope = scope
        self.found: dict[str, Loaded] = {}
        self.thread = threading.Thread(target=self._run, args=(source,), name="kb-predecode")

    def _run(self, source: Source) -> None:
        found: dict[str, Loaded] = {}
        try:
            for blob_id, spans, facts in source():
                found[blob_id] = (spans, decode_facts(facts) if spans else {})
        except Exception:  # the load decodes these blobs again, and raises then
            return
        self.found = found


_running: list[_Decoding] = []
"""The decodings started and not yet taken: the cached blobs' (``start_reading``, at the start
of the parse step) and the parse's own (``start``, at its end) may both be under way."""


def start(engine: Engine, blobs: Sequence[EncodedBlob], *, workers: int) -> bool:
    """Decode ``blobs`` (just parsed and about to be written to ``engine``'s cache) in a thread,
    if this process's run loads the program next, may use two cores (``workers``, as for the
    parse) and the blobs are many; whether it started."""
    return _start(engine, len(blobs), lambda: ((b.blob_id, b.spans, b.facts) for b in blobs), workers)


def start_reading(engine: Engine, blob_ids: Sequence[str], *, workers: int) -> bool:
    """Read the cached parses of ``blob_ids`` from ``engine`` and decode them, in a thread, on the
    same conditions as ``start``, for a process's first load (a cold ``kb index`` of a one-file
    commit: Django's 2,823 cached blobs, ~0.9 s), not for one that ``kept`` the last commit's
    blobs; whether it started."""
    if kept.holds(engine):
        return False

    def read() -> Iterator[tuple[str, tuple[Span, ...], bytes]]:
        with engine.connect() as conn:
            cached = reads.load_parsed_blobs(conn, parser_version(), blob_ids)
        for blob_id, blob in cached.items():
            yield blob_id, blob.spans, blob.facts

    return _start(engine, len(blob_ids), read, workers)


def _start(engine: Engine, count: int, source: Source, workers: int) -> bool:
    if not prefetch.active() or worker_count(workers) < 2 or count < PREDECODE_MIN_BLOBS:
        return False
    decoding = _Decoding((str(engine.url), parser_version()), source)
    _running.append(decoding)
    decoding.thread.start()
    return True


def take(engine: Engine, blob_ids: Sequence[str]) -> dict[str, Loaded]:
    """The decoded blobs among ``blob_ids`` (waiting for the threads), each handed over once; the
    rest of what they decoded is dropped."""
    settle()
    scope = (str(engine.url), parser_version())
    found: dict[str, Loaded] = {}
    for decoding in _running:
        if decoding.scope == scope:
            found.update(decoding.found)
    _running.clear()
    return {b: found[b] for b in blob_ids if b in found}


def settle() -> None:
    """Wait until the decoding threads (if any) are done; what they decoded stays to be taken."""
    for decoding in _running:
        if decoding.thread.ident is not None and decoding.thread is not threading.current_thread():
            decoding.thread.join()


def forget() -> None:
    """Drop every decoding, waiting for its thread first."""
    settle()
    _running.clear()


forked.settle_before_fork(settle)
