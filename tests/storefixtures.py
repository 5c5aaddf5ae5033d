"""Sample data for the store tests: commits, spans, grounded artifacts, and a postgres process probe.

Everything is derived from names through the real id functions, so the rows look like what the
pipeline writes (64-hex span and artifact ids, 40-hex shas) and the same call gives the same ids.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

import psutil
import sqlalchemy as sa

from kb_assets.core import ids
from kb_assets.core.json_text import canonical_json
from kb_assets.core.models import Artifact, EncodedBlob, Grounding, Method, ParsedBlob, Span, SpanKind
from kb_resources.store import writes
from kb_resources.store.schema import commit_ref
from kb_resources.store.target import parse_store_url

PARSER_VERSION = "test-1"
COMMITTED_AT = datetime(2024, 1, 1, tzinfo=UTC)
RAW_ARTIFACT = sa.text(
    "INSERT INTO artifact (artifact_id, kind, logical_key, extractor_id, extractor_version, method,"
    " confidence, payload)"
    " VALUES (decode(:aid, 'hex'), 'call_edge', 'call:raw', 'raw', '1', 'deterministic', 1, '{}')"
)
"""An artifact row ``:aid`` written past the application, without grounding: what the store's
own grounding check is there to refuse at COMMIT."""


def sha_of(name: str) -> str:
    """A 40-hex commit or blob id named after ``name``."""
    return hashlib.sha1(name.encode()).hexdigest()


def span(name: str, start: int, end: int, kind: SpanKind = SpanKind.FUNCTION) -> Span:
    """A span called ``name`` (its fingerprint is the name) at the given lines."""
    return Span(ids.span_id("python", kind, name, f"fp:{name}"), kind, name, start, end)


def grounded(
    logical_key: str,
    grounding: Sequence[Grounding],
    *,
    kind: str = "call_edge",
    payload: Mapping[str, object] | None = None,
) -> Artifact:
    """A deterministic artifact with a real id over ``grounding``."""
    body = dict(payload if payload is not None else {"key": logical_key})
    aid = ids.artifact_id(
        logical_key=logical_key, extractor_id="test", extractor_version="1", grounding=grounding, payload=body
    )
    return Artifact(aid, kind, logical_key, "test", "1", Method.DETERMINISTIC, 1.0, body, tuple(grounding))


def encode_facts(facts: Mapping[str, object]) -> bytes:
    """The facts encoding of the store tests (plain JSON: readable when a test fails)."""
    return canonical_json(dict(facts)).encode()


def encoded(blob: ParsedBlob, encode: Callable[[Mapping[str, object]], bytes] = encode_facts) -> EncodedBlob:
    """``blob`` as ``writes.insert_encoded_blobs`` takes it, its facts encoded by ``encode``."""
    return EncodedBlob(blob.blob_id, blob.spans, encode(blob.facts), blob.gaps, blob.line_count)


def seed_commit(
    conn: sa.Connection,
    sha: str,
    files: Mapping[str, Sequence[Span]],
    *,
    blobs: Mapping[str, str] | None = None,
) -> None:
    """Record commit ``sha`` with ``files`` (path -> spans of its blob) and their occurrences. Each
    file gets a blob of its own unless ``blobs`` names it (path -> name): files given the same
    name in two commits keep their blob, as an unchanged file does."""
    writes.upsert_commit(conn, sha=sha, tree_id=sha_of(f"tree:{sha}"), parents=[], committed_at=COMMITTED_AT)
    named = {path: (blobs or {}).get(path, f"{path}:{sha}") for path in files}
    parsed = [ParsedBlob(sha_of(f"blob:{named[p]}"), tuple(s), line_count=99) for p, s in files.items()]
    writes.insert_encoded_blobs(conn, PARSER_VERSION, map(encoded, parsed))
    writes.replace_commit_files(
        conn,
        sha,
        [(path, b.blob_id, "regular", 10, None, False) for path, b in zip(files, parsed, strict=True)],
    )
    conn.execute(sa.update(commit_ref).where(commit_ref.c.sha == sha).values(parser_version=PARSER_VERSION))


def publish(conn: sa.Connection, sha: str, artifacts: Sequence[Artifact]) -> None:
    """Store ``artifacts``, stage them under extractor "test" and publish them as ``sha``'s snapshot."""
    writes.insert_artifacts(conn, artifacts)
    writes.replace_staged(conn, sha, "test", [a.artifact_id for a in artifacts])
    writes.publish_snapshot(
        conn,
        sha,
        mode="full",
        base_sha=None,
        stats={"artifacts": len(artifacts)},
        parser_version=PARSER_VERSION,
    )


def live_postmasters(pgdata: Path) -> list[int]:
    """Pids of running (non-zombie) postgres processes serving ``pgdata``."""
    found = []
    for proc in psutil.process_iter(["name", "cmdline", "status"]):
        if proc.info["name"] != "postgres" or proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        if str(pgdata) in (proc.info["cmdline"] or ()):
            found.append(proc.pid)
    return found


def table_dump(conn: sa.Connection, table: sa.Table, *, skip: Sequence[str] = ()) -> list[tuple[object, ...]]:
    """Every row of ``table`` (minus the ``skip`` columns) in key order, for before/after comparisons."""
    columns = [c for c in table.columns if c.name not in skip]
    query = sa.select(*columns).order_by(*table.primary_key.columns)
    return [tuple(row) for row in conn.execute(query)]


def waiting_for_lock(conn: sa.Connection, key: int) -> int:
    """How many sessions wait for advisory lock ``key``."""
    query = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objid = :objid"
    return int(conn.scalar(sa.text(query), {"objid": key & 0xFFFFFFFF}) or 0)


def contending_processes(database_url: str, key: int, script: str, homes: Sequence[Path]) -> list[int]:
    """Run ``python -c script DATABASE_URL HOME`` once per home while this process holds advisory
    lock ``key``, release it once every one of them waits for it (so they really contend), and
    return their exit codes."""
    engine = sa.create_engine(parse_store_url(database_url))
    try:
        with engine.connect() as holder:
            holder.execute(sa.select(sa.func.pg_advisory_lock(key)))
            holder.commit()
            procs = [
                subprocess.Popen([sys.executable, "-c", script, database_url, str(home)]) for home in homes
            ]
            for _ in range(1200):
                if waiting_for_lock(holder, key) == len(procs) or any(p.poll() is not None for p in procs):
                    break
                time.sleep(0.05)
            queued = waiting_for_lock(holder, key)
            holder.execute(sa.select(sa.func.pg_advisory_unlock(key)))
            holder.commit()
        codes = [p.wait(timeout=120) for p in procs]
    finally:
        engine.dispose()
    assert queued == len(procs), f"{queued} of {len(procs)} processes waited for the lock"
    return codes
