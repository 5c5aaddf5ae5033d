"""Parsing many blobs on every core: plain processes, plain data in and out.

Workers are spawned (not forked) because the parent may hold database connections and Dagster
threads; each worker imports only the pure core.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor

from kb_assets.core.blobs import analyze_blob
from kb_assets.core.extractors.registry import COLLECTORS, EXTRACTORS
from kb_assets.core.models import ParsedBlob
from kb_assets.core.spans import ParseLimits

PARALLEL_MIN_BYTES = 4_000_000
"""Below this much source, spawning workers costs more than it saves."""

BATCH_BYTES = 1_000_000


def _analyze_batch(batch: list[tuple[str, bytes]], limits: ParseLimits) -> list[ParsedBlob]:
    return [analyze_blob(blob_id, data, EXTRACTORS, limits, COLLECTORS) for blob_id, data in batch]


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
    if requested > 0:
        return requested
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def analyze_blobs(
    blobs: list[tuple[str, bytes]],
    limits: ParseLimits,
    *,
    workers: int,
    on_done: Callable[[int], None] | None = None,
) -> list[ParsedBlob]:
    """Analyze every (blob_id, data) pair, in parallel when it pays; results in input order."""
    total_bytes = sum(len(d) for _, d in blobs)
    n = worker_count(workers)
    results: list[ParsedBlob] = []
    if n == 1 or total_bytes < PARALLEL_MIN_BYTES:
        for blob_id, data in blobs:
            results.append(analyze_blob(blob_id, data, EXTRACTORS, limits, COLLECTORS))
            if on_done is not None:
                on_done(len(results))
        return results
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=n, mp_context=ctx) as pool:
        futures = [pool.submit(_analyze_batch, batch, limits) for batch in _batches(blobs)]
        for future in futures:
            results.extend(future.result())
            if on_done is not None:
                on_done(len(results))
    return results
