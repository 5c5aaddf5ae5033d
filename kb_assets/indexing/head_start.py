"""A full parse started before the run that needs it: ``kb index`` hands the commit's new blobs
to the parse workers first, then imports Dagster and opens its instance while they work.

Until the ``code_spans`` step parses, a full index of Django kept ~1.1 of the two cores busy for
~1.9 s: the command's own start-up (imports, the instance, the run's first step) runs on one core,
beside the check process's imports, and the parse workers were spawned, and imported the parser,
only when the step began. Started
here, the workers take that core; the step then finds the parse under way and takes its results
(``parse.ensure_parsed``), writing them and keeping them for the load as it always did.

Only a parse of the very blobs the step would parse is taken (same store, parser version, limits
and list of blobs, which the step draws from the store's record of the commit and the head start
from git, by the same rule as ``preparse``); any other is stopped, and the step parses as before.
Nothing is written here: a run that fails before its parse, or a command that ends, only stops
the workers (``started``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from sqlalchemy import Engine

from kb_assets.core.extractors.registry import parser_version
from kb_assets.core.models import READABLE_MODES
from kb_assets.core.spans import ParseLimits
from kb_assets.indexing.parallel import PARALLEL_MIN_BYTES, Parsing, worker_count
from kb_resources.git.repo import GitRepo
from kb_resources.store import reads

HEAD_START_BATCHES = 8
"""Batches (``parallel.BATCH_BYTES``: ~8 MB of source) handed to the workers before the step asks
for them: more than they parse on the core the start-up leaves free (Django's parse is ~9 s of
CPU for 18 MB, so ~2 s of start-up is ~4 MB), few enough that their results stay small."""

HEAD_START_NICE = 10
"""The workers' niceness: they take only the CPU the command's start-up leaves."""


@dataclass(frozen=True, slots=True)
class _Key:
    """What makes a parse the step's own: its store, parser version, limits and blobs in order."""

    store: str
    parser: str
    limits: ParseLimits
    blobs: tuple[str, ...]


_started: tuple[_Key, Parsing] | None = None


@contextmanager
def started(
    repo: GitRepo, engine: Engine, sha: str, *, limits: ParseLimits, workers: int, force: bool
) -> Iterator[None]:
    """Start the parse of the commit's blobs not cached yet (all of them when ``force``) if they
    are many enough to be parsed in parallel, for the duration of the block; stop what is left
    of it at the end."""
    global _started  # noqa: PLW0603 - one head start per process, taken by its run
    stop()
    n = worker_count(workers)
    if n > 1:
        key, size = _todo(repo, engine, sha, limits, force)
        if key.blobs and size >= PARALLEL_MIN_BYTES:
            parsing = Parsing(((b, repo.read_blob(b)) for b in key.blobs), limits, n, nice=HEAD_START_NICE)
            parsing.submit(HEAD_START_BATCHES)
            _started = (key, parsing)
    try:
        yield
    finally:
        stop()


def take(engine: Engine, blob_ids: list[str], limits: ParseLimits) -> Parsing | None:
    """The parse under way of exactly ``blob_ids`` into ``engine``'s cache, handed over once; any
    other head start is stopped."""
    global _started  # noqa: PLW0603 - see ``started``
    if _started is None:
        return None
    key, parsing = _started
    _started = None
    if key == _Key(str(engine.url), parser_version(), limits, tuple(blob_ids)):
        return parsing
    parsing.close()
    return None


def stop() -> None:
    """Stop a head start nobody took."""
    global _started  # noqa: PLW0603 - see ``started``
    if _started is not None:
        _started[1].close()
        _started = None


def readable_blobs(repo: GitRepo, sha: str) -> dict[str, int]:
    """The commit's blobs that a parse reads (``READABLE_MODES``), with their sizes, by id in
    sorted order: what ``parse.parse_commit`` finds in the store's record of the commit, read
    from git (the commit need not be recorded yet)."""
    sizes = {f.blob_id: f.size for f in repo.python_files(sha) if f.mode in READABLE_MODES}
    return dict(sorted(sizes.items()))


def _todo(repo: GitRepo, engine: Engine, sha: str, limits: ParseLimits, force: bool) -> tuple[_Key, int]:
    """What the step will parse (the commit's readable blobs less those cached, unless ``force``),
    and its size in bytes."""
    pv = parser_version()
    sizes = readable_blobs(repo, sha)
    if not force:
        with engine.connect() as conn:
            cached = reads.parsed_blob_ids(conn, pv, list(sizes))
        sizes = {b: n for b, n in sizes.items() if b not in cached}
    return _Key(str(engine.url), pv, limits, tuple(sizes)), sum(sizes.values())
