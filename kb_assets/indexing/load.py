"""Load one commit as a ``Program`` from the store (parsing any blob whose facts are missing).

Every extractor of a run resolves against the same commit, so the last loaded program is kept in
memory: with the in-process executor the six extractor assets share one load. The blobs of that
program are remembered too, so a long-running process (``kb watch``, the Dagster daemon's runs)
loading the next commit of a branch reads from the store only the blobs that commit changed.
"""

from __future__ import annotations

from sqlalchemy import Engine

from kb_assets.core.blobs import decode_facts
from kb_assets.core.extractors.registry import parser_version
from kb_assets.core.models import JSON, READABLE_MODES, EncodedBlob
from kb_assets.core.modules import map_modules
from kb_assets.core.program import CONFIG_FILES, Program, SourceFile
from kb_assets.core.spans import ParseLimits
from kb_assets.indexing import predecode
from kb_assets.indexing.parse import ensure_parsed, forget_parsed, take_parsed
from kb_resources.git.files import read_path
from kb_resources.git.repo import GitRepo
from kb_resources.store import reads
from kb_resources.store.reads import CachedBlob

_last: tuple[tuple[str, str, str], Program] | None = None

_Loaded = predecode.Loaded
_blobs = predecode.kept
"""(spans, decoded facts) of the last program's blobs (``last_blobs``), kept in ``predecode``,
which reads nothing ahead for a process that keeps them."""


def load_program(repo: GitRepo, engine: Engine, sha: str, *, limits: ParseLimits, workers: int) -> Program:
    """The commit's files with spans and decoded facts, plus its module map (``workers``: the
    processes that parse missing blobs)."""
    global _last  # noqa: PLW0603 - a one-entry cache, see module docstring
    key = (str(engine.url), sha, parser_version())
    if _last is not None and _last[0] == key:
        return _last[1]
    with engine.connect() as conn:
        files = [f for f in reads.commit_files(conn, sha) if f.mode in READABLE_MODES]
    loaded = _load_blobs(repo, engine, sorted({f.blob_id for f in files}), limits=limits, workers=workers)
    sources: dict[str, SourceFile] = {}
    for f in files:
        spans, facts = loaded[f.blob_id]
        if not spans:
            continue  # not understood: its gap is recorded by the parse step
        sources[f.path] = SourceFile(
            path=f.path, blob_id=f.blob_id, module=f.module, is_package=f.is_package, spans=spans, facts=facts
        )
    program = Program(
        sha=sha, files=sources, module_map=map_modules(f.path for f in files), config=load_config(repo, sha)
    )
    _last = (key, program)
    return program


def _load_blobs(
    repo: GitRepo, engine: Engine, blob_ids: list[str], *, limits: ParseLimits, workers: int
) -> dict[str, _Loaded]:
    """Spans and decoded facts of ``blob_ids``: kept ones from memory (``_blobs``), the rest parsed
    if needed and read from the store, or taken as this process's last parse wrote them
    (``parse.take_parsed``)."""

    def fetch(missing: list[str]) -> dict[str, _Loaded]:
        decoded = predecode.take(engine, missing)
        ensure_parsed(repo, engine, [b for b in missing if b not in decoded], limits=limits, workers=workers)
        written = take_parsed(engine, missing)  # taken for all: what was decoded is dropped here
        found: dict[str, EncodedBlob | CachedBlob] = {b: c for b, c in written.items() if b not in decoded}
        rest = [b for b in missing if b not in decoded and b not in found]
        if rest:
            with engine.connect() as conn:
                found.update(reads.load_parsed_blobs(conn, parser_version(), rest))
        loaded = {b: (c.spans, decode_facts(c.facts) if c.spans else {}) for b, c in found.items()}
        return {**decoded, **loaded}

    return _blobs.get(engine, blob_ids, fetch)


def last_program() -> Program | None:
    """The program ``load_program`` loaded last, while it is kept."""
    return _last[1] if _last is not None else None


def load_config(repo: GitRepo, sha: str) -> dict[str, JSON]:
    """The text of each of the commit's ``CONFIG_FILES`` that exists (undecodable bytes replaced)."""
    found: dict[str, JSON] = {}
    for path in CONFIG_FILES:
        data = read_path(repo, sha, path)
        if data is not None:
            found[path] = data.decode("utf-8", "replace")
    return found


def forget_programs() -> None:
    """Drop the cached program and blobs, and what the last parse wrote (tests use it to force a
    fresh load)."""
    global _last  # noqa: PLW0603
    _last = None
    _blobs.forget()
    forget_parsed()
    predecode.forget()
