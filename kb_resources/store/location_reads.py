"""Reads by location for the MCP server: a file at a commit and the spans over one of its lines.

Each query starts from ``commit_file``'s (sha, path) key and reaches spans through the commit's
``blob_span`` rows (the ``span_occurrence`` view): no scan of a whole commit, whatever the
repository's size. Exposed through ``kb_resources.store.reads``.
"""

from __future__ import annotations

from typing import NamedTuple

import sqlalchemy as sa

from kb_resources.store.schema import (
    code_span,
    commit_file,
    commit_ref,
    parsed_blob,
    span_occurrence,
)


class FileAt(NamedTuple):
    """A file of a commit: its blob, module (None outside import roots) and length in lines."""

    path: str
    blob_id: str
    module: str | None
    is_package: bool
    line_count: int | None


class CoveringSpan(NamedTuple):
    """A span occurrence whose lines include the line asked about."""

    span_id: str
    kind: str
    fq_symbol_path: str
    start_line: int
    end_line: int


def file_at(conn: sa.Connection, sha: str, path: str) -> FileAt | None:
    """The file ``path`` of commit ``sha`` (None when the commit has no such file)."""
    f, c, p = commit_file.c, commit_ref.c, parsed_blob.c
    query = (
        sa.select(f.path, f.blob_id, f.module, f.is_package, p.line_count)
        .select_from(commit_file)
        .join(commit_ref, c.sha == f.sha)
        .outerjoin(parsed_blob, sa.and_(p.blob_id == f.blob_id, p.parser_version == c.parser_version))
        .where(f.sha == sha, f.path == path)
    )
    row = conn.execute(query).first()
    return FileAt(*row) if row is not None else None


def spans_covering(conn: sa.Connection, sha: str, path: str, line: int) -> list[CoveringSpan]:
    """The span occurrences of ``path`` at ``sha`` that contain ``line``, innermost first."""
    o = span_occurrence.c
    query = (
        sa.select(o.span_id, code_span.c.kind, code_span.c.fq_symbol_path, o.start_line, o.end_line)
        .join(code_span, code_span.c.span_id == o.span_id)
        .where(o.sha == sha, o.path == path, o.start_line <= line, o.end_line >= line)
    )
    rows = [CoveringSpan(*row) for row in conn.execute(query).all()]
    rows.sort(key=lambda s: (s.end_line - s.start_line, -s.start_line, s.fq_symbol_path, s.span_id))
    return rows
