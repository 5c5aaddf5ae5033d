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
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor

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
) -> Iterator[list[EncodedBlob]]:
    """Analyze every (blob_id, data) pair, in parallel when it pays: batches of results, in input
    order; ``on_done`` is told how many blobs are done after each batch."""
    done = 0
    for results in _results(blobs, limits, worker_count(workers)):
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
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=n, mp_context=ctx) as pool:
        pending: deque[Future[list[EncodedBlob]]] = deque()
        for batch in _batches(rest):
            pending.append(pool.submit(_analyze_batch, batch, limits))
            if len(pending) >= n * IN_FLIGHT_PER_WORKER:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
