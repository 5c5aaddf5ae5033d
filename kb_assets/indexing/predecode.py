"""A full parse's facts decoded in a thread while the parse step finishes, for the load after it.

The program load of a full index decodes the facts of every blob the parse has just written
(Django: 2,823 blobs, ~0.4 s of one core), at the start of the call-edge step. Before it, the
parse step writes its last batch, refreshes the statistics and digests the occurrences, and the
parse's checks run: about a second in which this process mostly waits for the server and the
second core idles (a full Django index: ~1.1 of the two cores busy from the workers' end to the
call graph's copies). The decoding is handed to a thread as soon as the workers have returned
the last batch (``start``); the load takes what it decoded (``take``).

Only for a run that executes every step in this process (``prefetch.active``: ``kb index``,
``kb watch``): a step process of a multiprocess run would decode for nobody. No fork happens
while the thread runs: ``forked`` waits for it first (``forked.settle_before_fork``), since a
copy made beside a running thread could inherit a lock it holds. A decoding that fails leaves
nothing to take, and the load decodes those blobs itself, meeting the same error if it is real.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from sqlalchemy import Engine

from kb_assets.core import forked
from kb_assets.core.blobs import decode_facts
from kb_assets.core.extractors.registry import parser_version
from kb_assets.core.models import JSON, EncodedBlob, Span
from kb_assets.indexing import prefetch
from kb_assets.indexing.parallel import worker_count

Loaded = tuple[tuple[Span, ...], dict[str, JSON]]
"""A blob's spans and decoded facts, as the program load keeps them (``load._blobs``)."""

PREDECODE_MIN_BLOBS = 200
"""Fewer freshly parsed blobs than this are decoded by the load itself (a few ms): a thread for
them would only be one more thing running beside the step."""


class _Decoding:
    """One thread decoding a parse's blobs, and what it decoded, for one store and parser."""

    def __init__(self, scope: tuple[str, str], blobs: Sequence[EncodedBlob]) -> None:
        self.scope = scope
        self.found: dict[str, Loaded] = {}
        self._blobs = blobs
        self.thread = threading.Thread(target=self._run, name="kb-predecode")

    def _run(self) -> None:
        found: dict[str, Loaded] = {}
        try:
            for blob in self._blobs:
                found[blob.blob_id] = (blob.spans, decode_facts(blob.facts) if blob.spans else {})
        except Exception:  # the load decodes these blobs again, and raises then
            return
        finally:
            self._blobs = ()
        self.found = found


_running: _Decoding | None = None


def start(engine: Engine, blobs: Sequence[EncodedBlob], *, workers: int) -> bool:
    """Decode ``blobs`` (just parsed and about to be written to ``engine``'s cache) in a thread,
    if this process's run loads the program next, may use two cores (``workers``, as for the
    parse) and the blobs are many; whether it started."""
    global _running  # noqa: PLW0603 - one decoding per process, like the parse's ``_written``
    forget()
    if not prefetch.active() or worker_count(workers) < 2 or len(blobs) < PREDECODE_MIN_BLOBS:
        return False
    _running = _Decoding((str(engine.url), parser_version()), blobs)
    _running.thread.start()
    return True


def take(engine: Engine, blob_ids: Sequence[str]) -> dict[str, Loaded]:
    """The decoded blobs among ``blob_ids`` (waiting for the thread), each handed over once; the
    rest of what it decoded is dropped."""
    global _running
    settle()
    decoding, _running = _running, None
    if decoding is None or decoding.scope != (str(engine.url), parser_version()):
        return {}
    found = decoding.found
    return {b: found[b] for b in blob_ids if b in found}


def settle() -> None:
    """Wait until the decoding thread (if any) is done; what it decoded stays to be taken."""
    decoding = _running
    if decoding is None or decoding.thread.ident is None:
        return
    if decoding.thread is not threading.current_thread():
        decoding.thread.join()


def forget() -> None:
    """Drop any decoding, waiting for its thread first."""
    global _running  # noqa: PLW0603
    settle()
    _running = None


forked.settle_before_fork(settle)
