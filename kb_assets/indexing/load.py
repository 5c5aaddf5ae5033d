"""Load one commit as a ``Program`` from the store (parsing any blob whose facts are missing).

Every extractor of a run resolves against the same commit, so the last loaded program is kept in
memory: with the in-process executor the six extractor assets share one load.
"""

from __future__ import annotations

from sqlalchemy import Engine

from kb_assets.core.blobs import decode_facts
from kb_assets.core.extractors.registry import parser_version
from kb_assets.core.models import JSON
from kb_assets.core.modules import map_modules
from kb_assets.core.program import CONFIG_FILES, Program, SourceFile
from kb_assets.core.spans import ParseLimits
from kb_assets.indexing.parse import READABLE, ensure_parsed
from kb_resources.git.files import read_path
from kb_resources.git.repo import GitRepo
from kb_resources.store import reads

_last: tuple[tuple[str, str, str], Program] | None = None


def load_program(repo: GitRepo, engine: Engine, sha: str, *, limits: ParseLimits, workers: int) -> Program:
    """The commit's files with spans and decoded facts, plus its module map."""
    global _last  # noqa: PLW0603 - a one-entry cache, see module docstring
    key = (str(engine.url), sha, parser_version())
    if _last is not None and _last[0] == key:
        return _last[1]
    with engine.connect() as conn:
        files = [f for f in reads.commit_files(conn, sha) if f.mode in READABLE]
    blob_ids = sorted({f.blob_id for f in files})
    ensure_parsed(repo, engine, blob_ids, limits=limits, workers=workers)
    with engine.connect() as conn:
        blobs = reads.load_parsed_blobs(conn, parser_version(), blob_ids)
    decoded: dict[str, dict[str, JSON]] = {}
    sources: dict[str, SourceFile] = {}
    for f in files:
        blob = blobs[f.blob_id]
        if not blob.spans:
            continue  # not understood: its gap is recorded by the parse step
        if f.blob_id not in decoded:
            decoded[f.blob_id] = decode_facts(blob.facts)
        sources[f.path] = SourceFile(
            path=f.path,
            blob_id=f.blob_id,
            module=f.module,
            is_package=f.is_package,
            spans=blob.spans,
            facts=decoded[f.blob_id],
        )
    program = Program(
        sha=sha, files=sources, module_map=map_modules(f.path for f in files), config=load_config(repo, sha)
    )
    _last = (key, program)
    return program


def load_config(repo: GitRepo, sha: str) -> dict[str, JSON]:
    """The text of each of the commit's ``CONFIG_FILES`` that exists (undecodable bytes replaced)."""
    found: dict[str, JSON] = {}
    for path in CONFIG_FILES:
        data = read_path(repo, sha, path)
        if data is not None:
            found[path] = data.decode("utf-8", "replace")
    return found


def forget_programs() -> None:
    """Drop the cached program (tests use it to force a fresh load)."""
    global _last  # noqa: PLW0603
    _last = None
