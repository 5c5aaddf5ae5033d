"""Where the call edges carried to the next commit (``call_carry``) live between commits.

Every run (``kb index``, a run the branch sensor launched, each commit of ``kb watch``) leaves
them in a file per repository under ``KB_HOME`` (``carry/<repo key>.calls``, ~10 MB for Django),
read by the next run whatever commit it indexes: an entry only says which id an edge of given
fields over given blobs has, which is true of any commit. ``kb watch`` also keeps the carry in
memory between its commits (``carried_between_commits``), so it reads the file once, and writes
it once a round's commits are published (``write_kept``), not on each commit's way to its
snapshot (~0.1 s of a warm Django commit). A missing, unreadable or outdated file (another
``call_carry.stamp``) is an empty carry; writing it is best effort, since it only saves the next
run some work.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from functools import partial
from pathlib import Path

from sqlalchemy import Engine

from kb_assets.core import forked
from kb_assets.core.extractors.base import Extractor
from kb_assets.core.extractors.call_carry import EdgeCarry
from kb_assets.core.extractors.calls import CallsExtractor
from kb_assets.core.program import Program
from kb_resources.store import reads

_watching = False
"""Whether ``carried_between_commits`` is active."""
_kept: EdgeCarry | None = None
"""The carry kept in memory by ``carried_between_commits`` (None until its first commit)."""
_stored_in: str | None = None
"""The store holding every id the kept carry remembers (``mark_staged``)."""
_unwritten: Path | None = None
"""Where the kept carry is to be written: it remembers a commit the file does not (``write_kept``)."""


@contextmanager
def carried_between_commits() -> Iterator[None]:
    """Within: the carry stays in memory from each commit this process indexes to the next
    (``kb watch``); the file is read at the first commit only, and written by ``write_kept``
    and on the way out."""
    global _watching, _kept, _stored_in, _unwritten
    previous = _watching, _kept, _stored_in, _unwritten
    _watching, _kept, _stored_in, _unwritten = True, None, None, None
    try:
        yield
    finally:
        write_kept()
        _watching, _kept, _stored_in, _unwritten = previous


def write_kept() -> Path | None:
    """Write the kept carry to its file if it remembers a commit the file does not (best effort,
    as ``keep_carry``): ``kb watch`` calls it when a round's commits are published. The file
    written, if one was."""
    global _unwritten
    path, _unwritten = _unwritten, None
    if path is None or _kept is None:
        return None
    keep_carry(_kept, path)
    _kept.prepare()  # for the next commit, now that nobody waits (``EdgeCarry``)
    return path


def carry_file(kb_home: Path, repo_key: str) -> Path:
    """The carry file of one repository."""
    return kb_home / "carry" / f"{repo_key}.calls"


def open_carry(extractor: Extractor, path: Path | None) -> EdgeCarry | None:
    """The carry ``extractor`` resolves against (only the call edges have one): the one kept in
    memory, else the file's (``path``; None: no file, and no carry outside a watch)."""
    global _kept  # noqa: PLW0603 - see carried_between_commits
    if not isinstance(extractor, CallsExtractor):
        return None
    if _kept is not None:
        return _kept
    if path is None and not _watching:
        return None
    carry = _read(path) if path is not None else EdgeCarry()
    if _watching:
        _kept = carry
    return carry


def kept_carry() -> EdgeCarry | None:
    """The carry a watch keeps in memory (None outside a watch, or before its first commit)."""
    return _kept


def mark_staged(carry: EdgeCarry, store: str) -> None:
    """``carry`` now remembers ids just staged in ``store`` (an engine's ``str(engine.url)``, as
    the parse and the load name their stores): if it is the kept carry, the watch's
    next commit need not look them up there (a staged id is a stored one: staging refuses any
    other, and nothing deletes artifacts). Looking up Django's ~75,800 carried ids took ~0.18 s
    of each watched commit."""
    global _stored_in  # noqa: PLW0603 - see carried_between_commits
    if carry is _kept:
        _stored_in = store


def known_stored(carry: EdgeCarry, engine: Engine, extractor_id: str) -> bool:
    """Whether every id ``carry`` remembers is known to be stored in ``engine``'s store, without
    looking each up: the watch's kept carry once ``mark_staged`` named that store, or a carry whose
    commit this store staged with exactly its ids (extractor ``extractor_id``'s), compared set by
    set (``reads.staged_exactly``: Django's 76k ids looked up took ~0.17 s of a cold one-file
    commit, the comparison ~0.04 s), as the file a run on this store left. A carry made on another
    store is neither, and is looked up."""
    if carry is _kept and _stored_in == str(engine.url):
        return True
    remembered = carry.remembered
    if remembered is None:
        return False
    sha, ids = remembered
    with engine.connect() as conn:
        return reads.staged_exactly(conn, sha, extractor_id, ids)


def _read(path: Path) -> EdgeCarry:
    try:
        with path.open("rb") as stream:
            return EdgeCarry.load(stream)
    except OSError:
        return EdgeCarry()


@contextmanager
def remembering(
    carry: EdgeCarry, program: Program, drafted: Sequence[str], path: Path | None, store: str
) -> Iterator[None]:
    """Around the staging of ``program``'s call edges (``drafted``: the ids of the drafted ones,
    in draft order): ``carry`` remembers them (``EdgeCarry.remember``) and is written to ``path``
    for the next run.

    A watch's kept carry does so after the staging, in this process: its next commit reads it
    from memory, and the file is written later (``write_kept``). A carry read from the file is
    only written back, so a forked copy of the process signs the new edges and writes the file
    while this one stages (on a full Django index all 75,908 edges are new: ~0.3 s of signing and
    ~0.1 s of writing that no longer wait for each other and the staging); if no copy can be
    made, or it fails, this process does it after the staging. The file may then be written even
    if the staging fails: a carry read from a file is always checked against the store
    (``known_stored``), and its ids are stored artifacts.
    """
    kept = carry is _kept or path is None
    writer = None if kept else forked.fork(partial(_remember_and_keep, carry, program, drafted, path))
    with writer if writer is not None else nullcontext():
        yield
        done = writer.result() if writer is not None else None
    if done is None:
        if carry is _kept:
            _remember_kept(carry, program, drafted, path)
        else:
            _remember_and_keep(carry, program, drafted, path)
        mark_staged(carry, store)  # the kept carry's ids are now staged in ``store``


def _remember_kept(carry: EdgeCarry, program: Program, drafted: Sequence[str], path: Path | None) -> None:
    """The kept carry remembers the commit; its file is written later (``write_kept``)."""
    global _unwritten  # noqa: PLW0603 - see carried_between_commits
    carry.remember(program, drafted)
    if path is not None:
        _unwritten = path


def _remember_and_keep(carry: EdgeCarry, program: Program, drafted: Sequence[str], path: Path | None) -> bool:
    """The carry remembered and written (best effort, as ``keep_carry``; True once it is done,
    written or not): in a forked copy, or here (``remembering``)."""
    carry.remember(program, drafted)
    keep_carry(carry, path)
    return True


def keep_carry(carry: EdgeCarry, path: Path | None) -> bool:
    """Write the carry for the next run (``path``; None: nowhere); False if the file could not be
    written."""
    return path is None or replace_file(path, carry.dump())


def replace_file(path: Path, chunks: Iterable[bytes]) -> bool:
    """Make ``chunks`` the whole content of ``path`` (readers see the old file or the new one,
    never a part); False if it could not be written (the old file, if any, stays)."""
    written: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=path.name, delete=False) as out:
            written = out.name
            out.writelines(chunks)
        os.replace(written, path)
    except OSError:
        if written is not None:
            Path(written).unlink(missing_ok=True)
        return False
    return True
