"""Building a run's artifacts from its drafts and storing them, shared with a forked copy of the
process when there are many.

Turning Django's 75,908 call-edge drafts into artifacts (grounding checked, ids hashed) and
storing them (serialized and sent by COPY, inserted by the server) took ~7 s of a full index on
one core. The drafts' second half goes to a forked copy (``kb_assets.core.forked``), which builds
and stores it over a connection of its own while this process does the first half; artifacts are
content-addressed and the halves disjoint, so the two writers' transactions never touch the same
row. Only drafts whose (kind, logical key) pairs are all distinct are split: the identity-conflict
check (``grounding.ArtifactBuilder``) compares each draft with every earlier one, which a split
would hide. If the copy fails, this process stores the second half itself; what is stored is the
same either way.

Drafts made on demand (``OnDemandDrafts``: the call edges) are not held at all: each process makes
its half's drafts batch by batch as it builds them, from the program and graph both hold, and
their logical keys are distinct by that type's contract.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from functools import partial

import sqlalchemy as sa
from sqlalchemy import Engine

from kb_assets.core import forked
from kb_assets.core.artifact_memo import ArtifactMemo
from kb_assets.core.errors import DraftKindError, GroundingError, IdentityConflictError
from kb_assets.core.extractors.base import Draft, Extractor, OnDemandDrafts
from kb_assets.core.grounding import ArtifactBuilder, artifact_batches
from kb_assets.core.models import Method
from kb_assets.core.program import Program
from kb_resources.store import writes
from kb_resources.store.bulk import LoadLog, stored_keys
from kb_resources.store.engine import create_store_engine

WRITE_ARTIFACTS = 5_000
"""Artifacts built and written per transaction (Django's call edges: 8 in each process). What a
batch holds while it is built and sent (its drafts, artifacts, payload text) is the call-edge
step's transient peak: 20,000 (until stop 26) left the full index's peak ~25 MiB higher, for no
measurable time (each batch costs a transaction and one probe of stored ids)."""

SHARE_MIN_DRAFTS = 8_000
"""Below this many drafts (~0.5 s of work) a copy costs more than it saves. Django's 11,089 import
edges are shared since stop 25 (the step 1.16-1.64 -> 0.99 s; the threshold was 20,000)."""

SAMPLE_DRAFTS = 256
"""Drafts built and looked up to decide whether a copy is worth forking (~5 ms on Django)."""

STORED_SHARE = 0.9
"""A sample this much stored means an incremental run: no copy."""


Drafts = list[Draft | None] | OnDemandDrafts
"""Drafts to store: a list whose slots are cleared as they are handed over, or made on demand."""


def store_drafts(
    engine: Engine, program: Program, extractor: Extractor, drafts: Drafts, memo: ArtifactMemo | None = None
) -> tuple[list[str], LoadLog]:
    """Build and store the artifacts of ``drafts`` ``WRITE_ARTIFACTS`` at a time, each batch in its
    own transaction; their ids in draft order, and what was loaded (for one statistics refresh).
    Each draft is dropped from ``drafts`` once its artifact is built (module docstring of
    ``kb_assets.indexing.extract``). With a ``memo`` (the extractor's in this store), drafts it
    remembers keep their ids and are not looked up in the store (``artifact_memos``); a forked
    copy's half is built without it."""
    log = LoadLog()
    cut = _split(drafts)
    if cut < len(drafts) and _mostly_stored(engine, program, extractor, drafts):
        cut = len(drafts)
    helper = (
        forked.fork(partial(_store_part, engine.url, program, extractor, drafts[cut:]))
        if cut < len(drafts)
        else None
    )
    if helper is None:
        return _store(engine, program, extractor, drafts, log, memo=memo), log
    with helper:
        ids = _store(engine, program, extractor, drafts, log, end=cut, memo=memo)
        part = helper.result()
    if part is None:
        ids += _store(engine, program, extractor, drafts, log, start=cut)
        return ids, log
    theirs, loaded = part
    log.rows.update(loaded)
    if isinstance(drafts, list):
        drafts[cut:] = [None] * (len(drafts) - cut)
    return ids + theirs, log


def _split(drafts: Drafts) -> int:
    """Where the copy's half starts: ``len(drafts)`` (no copy) for few drafts or repeated keys."""
    if len(drafts) < SHARE_MIN_DRAFTS:
        return len(drafts)
    if isinstance(drafts, OnDemandDrafts):
        return len(drafts) // 2  # distinct keys by contract
    keys = {(d.kind, d.logical_key) for d in drafts if d is not None}
    return len(drafts) // 2 if len(keys) == len(drafts) else len(drafts)


def _mostly_stored(engine: Engine, program: Program, extractor: Extractor, drafts: Drafts) -> bool:
    """Whether the artifacts of ``SAMPLE_DRAFTS`` drafts, evenly spaced (a commit's new artifacts
    cluster in the files it changed), are nearly all stored already. The drafts are read, not
    handed over; a sample that cannot be built says no, and the build itself raises as before."""
    step = max(1, len(drafts) // SAMPLE_DRAFTS)
    builder = ArtifactBuilder(
        extractor.extractor_id, extractor.version, program, Method.DETERMINISTIC, extractor.kind
    )
    try:
        sample = (drafts[i] for i in range(0, len(drafts), step))
        ids = {builder(d)[0].artifact_id for d in sample if d is not None}
    except (DraftKindError, GroundingError, IdentityConflictError):
        return False
    with engine.begin() as conn:
        stored = stored_keys(conn, "artifact", "artifact_id", ids)
    return len(stored) >= STORED_SHARE * len(ids)


def _store(
    engine: Engine,
    program: Program,
    extractor: Extractor,
    drafts: Drafts,
    log: LoadLog,
    *,
    start: int = 0,
    end: int | None = None,
    memo: ArtifactMemo | None = None,
) -> list[str]:
    """Build and store ``drafts[start:end]``; their ids in draft order. The artifacts ``memo``
    recalls are stored already: a batch of only those costs no transaction."""
    ids: list[str] = []
    batches = artifact_batches(
        _handed_over(drafts, start, len(drafts) if end is None else end),
        extractor_id=extractor.extractor_id,
        extractor_version=extractor.version,
        program=program,
        size=WRITE_ARTIFACTS,
        kind=extractor.kind,
        memo=memo,
    )
    for batch in batches:
        fresh = batch if memo is None else [a for a in batch if a.artifact_id not in memo.recalled]
        if fresh:
            with engine.begin() as conn:
                writes.insert_artifacts(conn, fresh, log=log)
        ids += (a.artifact_id for a in batch)
    return ids


def _store_part(
    url: sa.URL, program: Program, extractor: Extractor, drafts: Drafts
) -> tuple[list[str], Counter[str]]:
    """In the forked copy: store ``drafts`` over a new connection (the parent's are not touched)."""
    engine = create_store_engine(url)
    try:
        log = LoadLog()
        return _store(engine, program, extractor, drafts, log), log.rows
    finally:
        engine.dispose()


def _handed_over(drafts: Drafts, start: int, end: int) -> Iterator[Draft]:
    """Each draft of ``drafts[start:end]`` once, its slot cleared first: a draft is then held
    only by what is built from it (drafts made on demand are held by nothing else)."""
    if isinstance(drafts, OnDemandDrafts):
        yield from drafts[start:end]
        return
    for i in range(start, end):
        draft = drafts[i]
        drafts[i] = None
        if draft is not None:
            yield draft
