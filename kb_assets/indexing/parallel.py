"""Parsing many blobs on every core: plain processes, plain data in and out.

Workers are spawned (not forked) because the parent may hold database connections and Dagster
threads; each worker imports only the pure core. A worker encodes the facts it collected before
returning them (``EncodedBlob``): the parent only writes them to the cache, so it never unpickles,
nor holds, the decoded facts of the whole commit (Django: about 150 MiB of small objects), and the
encoding runs on every core. Results come back batch by batch, so the caller can write and drop
each batch; at most a few batches are in flight at once. The blobs themselves are read as their
batch is made, not all first: Django's 18 MB of source, held for the whole parse, stayed in the
run's memory after it (its peak, much later, was 4-7 MiB lower without).
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from functools import partial

from kb_assets.core.blobs import analyze_blob, encode_blob
from kb_assets.core.extractors.registry import COLLECTORS, EXTRACTORS
from kb_assets.core.forked import cores
from kb_assets.core.models import EncodedBlob
from kb_assets.core.spans import ParseLimits

PARALLEL_MIN_BYTES = 4_000_000
"""Below this much source, spawning workers costs more than it saves."""

BATCH_BYTES = 1_000_000

IN_FLIGHT_PER_WORKER = 2
"""Batches submitted ahead per worker: enough to keep every worker busy, few enough that the
results waiting to be written stay small."""


def _analyze_batch(batch: list[tuple[str, bytes]], limits: ParseLimits) -> list[EncodedBlob]:
    return [
        encode_blob(analyze_blob(blob_id, data, EXTRACTORS, limits, COLLECTORS)) for blob_id, data in batch
    ]


def _batches(blobs: Iterable[tuple[str, bytes]]) -> Iterator[list[tuple[str, bytes]]]:
    batch: list[tuple[str, bytes]] = []
    size = 0
    for item in blobs:
        batch.append(item)
        size += len(item[1])
        if size >= BATCH_BYTES:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def worker_count(requested: int) -> int:
    """How many processes to use: the request, else every core this process may run on."""
    return requested if requested > 0 else cores()


def analyze_blobs(
    blobs: Iterable[tuple[str, bytes]],
    limits: ParseLimits,
    *,
    workers: int,
    on_done: Callable[[int], None] | None = None,
    started: Parsing | None = None,
) -> Iterator[list[EncodedBlob]]:
    """Analyze every (blob_id, data) pair, in parallel when it pays: batches of results, in input
    order; ``on_done`` is told how many blobs are done after each batch. ``started``: the same
    blobs' parse, already under way (``head_start``), whose results this takes instead."""
    batches = started.results() if started is not None else _results(blobs, limits, worker_count(workers))
    done = 0
    for results in batches:
        done += len(results)
        if on_done is not None:
            on_done(done)
        yield results


def _results(blobs: Iterable[tuple[str, bytes]], limits: ParseLimits, n: int) -> Iterator[list[EncodedBlob]]:
    items = iter(blobs)
    head: list[tuple[str, bytes]] = []  # read ahead to decide: up to PARALLEL_MIN_BYTES
    size = 0
    if n > 1:
        for item in items:
            head.append(item)
            size += len(item[1])
            if size >= PARALLEL_MIN_BYTES:
                break
    rest = itertools.chain(head, items)
    if size < PARALLEL_MIN_BYTES:
        for batch in _batches(rest):
            yield _analyze_batch(batch, limits)
        return
    yield from Parsing(rest, limits, n).results()


class Parsing:
    """A parse on ``n`` spawned workers: batches submitted ahead of their results, which come
    back in input order. Made by ``analyze_blobs`` when the blobs are many, or earlier by a
    caller that knows the parse is coming (``head_start``) and lets the workers start on it
    while it does other things; ``results`` then continues from the batches already submitted."""

    def __init__(
        self, blobs: Iterable[tuple[str, bytes]], limits: ParseLimits, n: int, *, nice: int = 0
    ) -> None:
        self._batches = _batches(blobs)
        self._limits = limits
        self._n = n
        self._pool = ProcessPoolExecutor(
            max_workers=n,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=partial(os.nice, nice) if nice else None,
        )
        self._pending: deque[Future[list[EncodedBlob]]] = deque()

    def submit(self, batches: int) -> None:
        """Keep ``batches`` submitted and not yet taken (fewer when the blobs run out)."""
        while len(self._pending) < batches:
            batch = next(self._batches, None)
            if batch is None:
                return
            self._pending.append(self._pool.submit(_analyze_batch, batch, self._limits))

    def results(self) -> Iterator[list[EncodedBlob]]:
        """Every batch's results, in input order, submitting the next batches as they go; the
        workers are stopped at the end, or when the caller stops early or fails."""
        ahead = self._n * IN_FLIGHT_PER_WORKER
        try:
            self.submit(ahead)
            while self._pending:
                yield self._pending.popleft().result()
                self.submit(ahead)
        finally:
            self.close()

    def close(self) -> None:
        """Stop the workers; batches not started are dropped."""
        self._pool.shutdown(wait=True, cancel_futures=True)
