"""The gates as plain functions over the store and git: each returns its evidence.

Dagster checks (``kb_gates.checks``) and tests both call these, so what the UI shows and what the
test suite proves are the same computation.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import NamedTuple

from sqlalchemy import Engine

from kb_assets.core.extractors.base import Extractor
from kb_assets.core.extractors.imports import EXTRACTOR_ID as IMPORTS_ID
from kb_assets.core.extractors.public_api import EXTRACTOR_ID as PUBLIC_API_ID
from kb_assets.core.extractors.registry import EXTRACTORS, parser_version
from kb_assets.core.ids import artifact_id
from kb_assets.core.llm.units import MODEL_PASS_IDS
from kb_assets.core.models import JSON, READABLE_MODES, Grounding
from kb_assets.core.modules import ModuleMap, map_modules
from kb_assets.core.program import Program
from kb_assets.core.program_memo import PerProgram
from kb_assets.core.spans import ParseLimits
from kb_assets.indexing.extract import run_extractor
from kb_assets.indexing.load import load_program
from kb_gates.check_process import Rows
from kb_gates.griffe_oracle import Entry, griffe_surface
from kb_gates.grimp_oracle import grimp_graph
from kb_gates.metrics import SetDiff, compare
from kb_resources.git.repo import GitRepo
from kb_resources.store import reads
from kb_resources.store.reads import ArtifactRecord

UNPARSED = frozenset({"binary", "not_utf8", "too_large", "syntax_error", "parse_timeout"})
"""Parse gap reasons that leave a file without spans (exported empty for grimp)."""


def delta_since(engine: Engine, sha: str, extractor_id: str, base: str | None) -> str | None:
    """The published base whose snapshot proves what the blocking checks of this extractor's
    staged set may skip (None: check the whole set); see ``kb_resources.store.staged_delta``."""
    with engine.connect() as conn:
        return reads.delta_base(conn, sha, extractor_id, base, parser_version())


def grounded_since(engine: Engine, sha: str, extractor_id: str, base: str | None) -> str | None:
    """``delta_since`` for ``every_artifact_grounded``: None after a change too large for reading
    against the base to pay (``reads.grounded_base``)."""
    with engine.connect() as conn:
        return reads.grounded_base(conn, sha, extractor_id, base, parser_version())


def proven_base(engine: Engine, sha: str, base: str | None) -> str | None:
    """``base`` if its published snapshot can stand as proof for ``sha`` (``reads.proven_base``)."""
    with engine.connect() as conn:
        return reads.proven_base(conn, sha, base, parser_version())


def ungrounded(engine: Engine, sha: str, extractor_id: str, *, since: str | None = None) -> list[str]:
    """Staged artifacts of the commit with no grounding row that points at a real occurrence (of
    those ``since`` does not prove, when given)."""
    with engine.connect() as conn:
        return reads.ungrounded_staged(conn, sha, extractor_id, parser_version(), since=since)


def reproducibility_diff(
    repo: GitRepo, engine: Engine, sha: str, extractor: Extractor, *, limits: ParseLimits, workers: int
) -> SetDiff[str]:
    """Recompute the extractor over the commit and compare ids with what was staged.

    The program comes from the per-process cache when the same run just loaded it (loading is a
    pure, sorted read); what this proves is that resolution and identity are deterministic. So the
    extractor resolves a copy of it: the symbol table, the call graph and the upstream extractions
    are remembered per program object, and resolving the same object again would only reuse them.
    """
    program = load_program(repo, engine, sha, limits=limits, workers=workers)
    again = run_extractor(extractor, _recomputed(program))
    with engine.connect() as conn:
        staged = reads.staged_artifact_ids(conn, sha, extractor.extractor_id)
    return compare(staged, (a.artifact_id for a in again.artifacts))


def _copy_of(program: Program) -> Program:
    """A distinct program object with the same contents (nothing remembered for it yet), each of
    whose files has a facts mapping of its own: what is remembered per file for the very same
    facts object (``core.per_file``, the symbol table's module views) is made again too."""
    files = {
        path: dataclasses.replace(source, facts=dict(source.facts)) for path, source in program.files.items()
    }
    return dataclasses.replace(program, files=files)


_recomputed: PerProgram[Program] = PerProgram(_copy_of)
"""One copy per loaded program: every recomputation of a run (each extractor's check, ``kb
verify``'s) resolves the same copy, so what a copy needs is built once."""


class Reproducibility(NamedTuple):
    """How the reproducibility gate ran on one extractor and what it found."""

    mode: str
    """``recomputed`` (the extractor resolved again) or ``stored sample``."""
    since: str | None
    """The base whose snapshot the stored sample skipped (None: drawn from the whole set)."""
    diff: SetDiff[str]


def ids_reproducibility(
    repo: GitRepo,
    engine: Engine,
    sha: str,
    extractor: Extractor,
    *,
    limits: ParseLimits,
    workers: int,
    max_files: int,
    sample: int,
    base: str | None = None,
) -> Reproducibility:
    """The blocking reproducibility gate: the full recomputation for a commit of up to
    ``max_files`` Python files, else the stored sample (``verify_commit`` recomputes it all), drawn
    from the records new since ``base`` when the set is large and ``base`` proven (``delta_since``)."""
    if recomputes(repo, sha, max_files):
        diff = reproducibility_diff(repo, engine, sha, extractor, limits=limits, workers=workers)
        return Reproducibility("recomputed", None, diff)
    since = delta_since(engine, sha, extractor.extractor_id, base)
    diff = stored_ids_diff(engine, sha, extractor.extractor_id, sample=sample, since=since)
    return Reproducibility("stored sample", since, diff)


def recomputes(repo: GitRepo, sha: str, max_files: int) -> bool:
    """Whether ``ids_reproducibility`` resolves the commit again (a program of up to ``max_files``
    Python files) rather than reading a stored sample."""
    return len(repo.python_files(sha)) <= max_files


def extractions_diff(
    repo: GitRepo, engine: Engine, sha: str, *, limits: ParseLimits, workers: int
) -> dict[str, SetDiff[str]]:
    """``reproducibility_diff`` of every registered extractor, by extractor id."""
    return {
        ex.extractor_id: reproducibility_diff(repo, engine, sha, ex, limits=limits, workers=workers)
        for ex in EXTRACTORS
    }


def stored_ids_diff(
    engine: Engine, sha: str, extractor_id: str, *, sample: int, since: str | None = None
) -> SetDiff[str]:
    """Recompute the id of a deterministic sample of the extractor's staged artifacts from their
    stored records (logical key, versions, grounding, payload as read back) and compare.

    What a full recomputation proves about resolution, this proves about the way back from the
    store: the record behind an id is the record that id names (the payload survived the JSON
    round trip, no grounding row went missing or appeared). It reads ``sample`` records instead of
    resolving the whole program, so it can stay on the hot path of a large repository while the
    full recomputation runs in ``verify_commit``. Given ``since`` (a proven base), the sample is drawn
    from the records its snapshot lacks: the others were written, and could be sampled, before.
    """
    with engine.connect() as conn:
        chosen = reads.staged_sample(conn, sha, extractor_id, sample, since=since)
        records = reads.records_by_id(conn, sha, chosen)
    again = [_stored_id(r) for r in records.values() if r.grounding]
    return compare(chosen, again)


def _stored_id(record: ArtifactRecord) -> str:
    """The id of a stored record as read back; for one with a grounding row stored twice, which
    the id (made of distinct rows) would not show, a line saying so, which then differs from
    every id: the table keeps no key to refuse a repeat (migration 0009).

    A row comes back once per place its span occurs at the commit, each with its lines, once the
    commit is published (the same statement twice in one function is one span, at two places):
    only a row repeated at the same place, or twice unplaced, was stored twice. The id takes each
    row once however often it came back (``ids.grounding_rows``)."""
    if len(set(record.grounding)) != len(record.grounding):  # each row read back with its place
        return f"{record.artifact_id} has a grounding row stored twice"
    grounding = [Grounding(g.span_id, g.path, g.role) for g in record.grounding]
    return artifact_id(
        logical_key=record.logical_key,
        extractor_id=record.extractor_id,
        extractor_version=record.extractor_version,
        grounding=grounding,
        payload=record.payload,
        prompt_version=record.prompt_version,
        model_id=record.model_id,
    )


def span_rows(engine: Engine, sha: str, *, since: str | None = None) -> Iterator[Rows]:
    """The commit's span occurrences, the span frame's rows, one batch at a time
    (``reads.span_frame_batches``); given ``since`` (a proven base), those on files whose blob
    differs there."""
    with engine.connect() as conn:
        yield from reads.span_frame_batches(conn, sha, parser_version(), since=since)


def artifact_rows(engine: Engine, sha: str, extractor_id: str, *, since: str | None = None) -> Iterator[Rows]:
    """The extractor's staged artifacts with their grounding-row counts, the artifact frame's rows,
    those new since ``since`` when given, one batch at a time in artifact id order
    (``staged_grounding_batches``): the frame check validates each and drops it, so a large set's
    frame (Django's call edges: +20 MiB of polars memory where a full index reached its peak)
    never exists whole."""
    with engine.connect() as conn:
        yield from reads.staged_grounding_batches(conn, sha, extractor_id, since=since)


def orphans(engine: Engine, sha: str, *, since: str | None = None) -> dict[str, int]:
    """Non-zero orphan counts of the published snapshot (empty when clean); of the part ``since``
    does not prove, when given (a proven base whose own counts were zero on its current snapshot)."""
    with engine.connect() as conn:
        if since is None:
            found = reads.orphans(conn, sha)
        else:
            found = reads.orphans_since(
                conn, sha, base=since, parser_version=parser_version(), model_passes=MODEL_PASS_IDS
            )
    return {k: v for k, v in found.items() if v}


def _oracle_inputs(
    engine: Engine, sha: str, extractor_id: str
) -> tuple[list[tuple[str, str]], set[str], ModuleMap, list[JSON]]:
    """What an oracle needs: the commit's (path, blob) files, the unparsed paths, its module map
    and the extractor's staged payloads."""
    with engine.connect() as conn:
        files = [f for f in reads.commit_files(conn, sha) if f.mode in READABLE_MODES]
        parse_gaps = {g.path for g in reads.gaps(conn, sha) if g.source == "parse" and g.reason in UNPARSED}
        records = reads.staged_payloads(conn, sha, extractor_id)
    module_map = map_modules(f.path for f in files)
    return [(f.path, f.blob_id) for f in files], parse_gaps, module_map, list(records)


def grimp_diff(repo: GitRepo, engine: Engine, sha: str) -> SetDiff[tuple[str, str]]:
    """Internal import edges knowbase staged vs grimp's graph of the same commit's packages."""
    files, parse_gaps, module_map, records = _oracle_inputs(engine, sha, IMPORTS_ID)
    packages = sorted(m for m in module_map.packages if "." not in m)
    graph = grimp_graph(repo, files, roots=module_map.roots, packages=packages, blank=parse_gaps)
    ours = {
        (p["importer"], p["imported"])
        for p in records
        if p["importer"] in graph.modules and p["imported"] in graph.modules
    }
    theirs = {(a, b) for a, b in graph.edges if a != b}
    return compare(theirs, ours)


def public_api_diff(repo: GitRepo, engine: Engine, sha: str) -> SetDiff[Entry]:
    """(package, name, target) of the staged public symbols vs griffe's static view of the commit.

    Only packages griffe loaded are compared; the deliberate differences in semantics are listed
    in ``kb_gates.griffe_oracle``.
    """
    files, parse_gaps, module_map, records = _oracle_inputs(engine, sha, PUBLIC_API_ID)
    packages = sorted(m for m in module_map.packages if "." not in m)
    surface = griffe_surface(repo, files, roots=module_map.roots, packages=packages, blank=parse_gaps)
    ours = {
        (p["package"], p["name"], p["target"])
        for p in records
        if p["package"].split(".", 1)[0] in surface.loaded
    }
    return compare(surface.entries, ours)
