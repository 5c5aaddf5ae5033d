"""``kb export``, ``kb spans`` and ``kb show``: reading a commit's knowledge back out."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator

from kb_assets.cli.session import indexed_sha, open_session
from kb_assets.core.collector import paused_gc
from kb_assets.core.errors import CheckFailedError
from kb_assets.core.extractors.base import LocatedGrounding
from kb_assets.core.json_text import record_json
from kb_assets.core.models import JSON
from kb_assets.core.records import export_record, provenance
from kb_assets.core.summary import printable
from kb_resources.store import reads
from kb_resources.store.reads import ArtifactRecord


def add_export_arguments(p: argparse.ArgumentParser) -> None:
    """Flags of ``kb export``."""
    p.add_argument(
        "--sha", default=None, metavar="REV", help="indexed commit (default: newest indexed on HEAD's branch)"
    )
    p.add_argument("--kind", action="append", default=None, help="only this artifact kind (repeatable)")
    p.add_argument("--format", choices=["jsonl"], default="jsonl", help="output format")


def add_spans_arguments(p: argparse.ArgumentParser) -> None:
    """Flags of ``kb spans``."""
    p.add_argument(
        "--sha", default=None, metavar="REV", help="indexed commit (default: newest indexed on HEAD's branch)"
    )


def add_show_arguments(p: argparse.ArgumentParser) -> None:
    """Flags of ``kb show``."""
    add_spans_arguments(p)
    p.add_argument("--kind", action="append", default=None, help="only this artifact kind (repeatable)")
    p.add_argument("--limit", type=int, default=10, help="how many units to print (default 10)")


def _located(rec: ArtifactRecord) -> list[LocatedGrounding]:
    """Grounding placed at the commit; an occurrence missing at the commit is an orphan (a bug the
    zero-orphans gate reports), so it is refused here rather than printed without lines."""
    located = []
    for g in rec.grounding:
        if g.start_line is None or g.end_line is None:
            missing = f"{rec.logical_key}: span {g.span_id[:12]} has no occurrence in {g.path}"
            raise CheckFailedError([missing])
        located.append(LocatedGrounding(g.span_id, g.path, g.role, g.start_line, g.end_line))
    return located


def records(session_args: argparse.Namespace) -> Iterator[tuple[str, dict[str, JSON]]]:
    """(sha, export record) for every artifact of the selected snapshot, sorted by logical key."""
    session = open_session(session_args, read_only=True)
    sha = indexed_sha(session, session_args.sha)
    with session.store.engine.connect() as conn, paused_gc():  # ~88k records and their grounding
        rows = reads.snapshot_records(conn, sha, session_args.kind)
    for rec in rows:
        yield (
            sha,
            export_record(
                artifact_id=rec.artifact_id,
                kind=rec.kind,
                logical_key=rec.logical_key,
                extractor_id=rec.extractor_id,
                extractor_version=rec.extractor_version,
                method=rec.method,
                confidence=rec.confidence,
                payload=rec.payload,
                grounding=_located(rec),
            ),
        )


def run_export(args: argparse.Namespace) -> int:
    """Write one JSON object per artifact to stdout."""
    out = sys.stdout
    for _, record in records(args):
        out.write(record_json(record) + "\n")
    return 0


def run_spans(args: argparse.Namespace) -> int:
    """Write one JSON object per span occurrence to stdout."""
    session = open_session(args, read_only=True)
    sha = indexed_sha(session, args.sha)
    with session.store.engine.connect() as conn:
        rows = reads.span_occurrences(conn, sha)
    out = sys.stdout
    for r in rows:
        record = {
            "span_id": r.span_id,
            "kind": r.kind,
            "fq_symbol_path": r.fq_symbol_path,
            "file": r.path,
            "start_line": r.start_line,
            "end_line": r.end_line,
        }
        out.write(record_json(record) + "\n")
    return 0


def run_show(args: argparse.Namespace) -> int:
    """Print a handful of units for people: key, payload summary and ``file:lines@sha`` provenance.

    The sample is spread over the kinds present (round robin, in kind order) and prefers
    first-party units, so a repository's own structure shows before its third-party imports.
    """
    chosen = sample_records(list(records(args)), args.limit)
    for sha, record in chosen:
        grounding = [
            LocatedGrounding(g["span_id"], g["file"], g["role"], g["start_line"], g["end_line"])
            for g in record["grounding"]
        ]
        print(
            printable(
                f"{record['logical_key']}  [{record['kind']}, {record['method']}, "
                f"confidence {record['confidence']}]"
            )
        )
        print(printable(f"    {json.dumps(record['payload'], sort_keys=True, ensure_ascii=False)}"))
        for line in provenance(grounding, sha[:12]):
            print(printable(f"    grounded on {line}"))
    if not chosen:
        print("no knowledge units in this snapshot")
    return 0


def sample_records(rows: list[tuple[str, dict[str, JSON]]], limit: int) -> list[tuple[str, dict[str, JSON]]]:
    """Up to ``limit`` records, round robin over kinds, first-party (non-external) ones first."""
    by_kind: dict[str, list[tuple[str, dict[str, JSON]]]] = {}
    for row in rows:
        by_kind.setdefault(row[1]["kind"], []).append(row)
    queues = [
        sorted(items, key=lambda r: (bool(r[1]["payload"].get("external")), r[1]["logical_key"]))
        for _, items in sorted(by_kind.items())
    ]
    chosen: list[tuple[str, dict[str, JSON]]] = []
    while len(chosen) < limit and any(queues):
        for queue in queues:
            if queue and len(chosen) < limit:
                chosen.append(queue.pop(0))
    return chosen
