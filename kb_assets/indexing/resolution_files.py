"""Where a commit's call-graph resolutions (``callgraph.resolutions``) live between ``kb index``
runs: a file per repository under ``KB_HOME`` (``carry/<repo key>.resolutions``, ~2 MB for
Django), beside the carried call edges.

A watch keeps its resolutions in memory from one commit to the next; a process that indexes one
commit reads the last run's from this file instead, so a one-file Django commit re-resolves the
~25 files its change can reach (~0.5 s) instead of all 2,823 (~1.8 s on two cores). What a file
vouches for is decided by ``resolutions.stale`` against the program at hand: it may come from
any earlier commit. The file holds Python objects of the resolver (pickled, compressed) and so
is read only when it was written by this very resolver: its header is a digest of every source
file of ``kb_assets.core`` and of the parser version (``stamp``). A missing, damaged or foreign
file is no file; writing one is best effort.
"""

from __future__ import annotations

import functools
import hashlib
import pickle
import sys
import zlib
from functools import partial
from pathlib import Path

import kb_assets.core
from kb_assets.core import forked
from kb_assets.core.callgraph.graph import kept_now
from kb_assets.core.callgraph.resolutions import Resolutions
from kb_assets.core.extractors.registry import parser_version
from kb_assets.core.forked import Forked
from kb_assets.indexing.carries import replace_file

FORMAT = 1
"""The layout of the file (header line, then the compressed pickle)."""


@functools.cache
def stamp() -> bytes | None:
    """What a file's resolutions depend on besides the program: the format, the interpreter, the
    parser (the facts resolved) and the resolver's code, all of ``kb_assets.core``; None when
    that code is not there to read (an installation without sources): then no file is used."""
    return code_digest(Path(kb_assets.core.__file__).parent, f"{FORMAT}\0{sys.version}\0{parser_version()}")


def code_digest(root: Path, versions: str) -> bytes | None:
    """A hex digest of ``versions`` and of every Python source file under ``root`` (names and
    bytes); None if there is none."""
    sources = sorted(root.rglob("*.py"))
    if not sources:
        return None
    digest = hashlib.sha256(versions.encode())
    for path in sources:
        digest.update(b"\0" + path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest().encode()


def resolutions_file(carry_file: Path) -> Path:
    """The resolutions file beside a repository's carry file (``carries.carry_file``)."""
    return carry_file.with_suffix(".resolutions")


class ResolutionFile:
    """A ``graph.ResolutionStore`` in one file; a context manager, because it writes in a forked
    copy of the process (``save``) that is waited for on the way out."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._writer: Forked[None] | None = None

    def __enter__(self) -> ResolutionFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self._finish()

    def load(self) -> Resolutions | None:
        """The file's resolutions, if it is readable and was written under this ``stamp``."""
        expected = stamp()
        try:
            data = self.path.read_bytes() if expected is not None else b""
        except OSError:
            return None
        header, _, body = data.partition(b"\n")
        if expected is None or header != expected:
            return None
        try:
            # Written by this very resolver (the stamp) into the user's own KB_HOME, like the
            # parse cache and the carry; nothing the MCP server reads.
            value = pickle.loads(zlib.decompress(body))  # noqa: S301
        except Exception:  # a damaged file is no file
            return None
        return value if isinstance(value, Resolutions) else None

    def save(self, kept: Resolutions) -> None:
        """Replace the file with ``kept``, in a forked copy when one can be made: pickling and
        compressing Django's resolutions takes ~0.6 s, which the run spends on its drafts and
        writes meanwhile instead of waiting."""
        self._finish()
        writer = forked.fork(partial(self._write, kept))
        if writer is None:
            self._write(kept)
        self._writer = writer

    def _finish(self) -> None:
        """Wait for the copy writing the file, if one is (it fails alone: best effort)."""
        writer, self._writer = self._writer, None
        if writer is not None:
            with writer:
                writer.result()

    def _write(self, kept: Resolutions) -> None:
        """Replace the file with ``kept`` (``carries.replace_file``: best effort, never a part)."""
        header = stamp()
        if header is not None:
            body = zlib.compress(pickle.dumps(kept, protocol=pickle.HIGHEST_PROTOCOL), 1)
            replace_file(self.path, (header, b"\n", body))


def write_kept_resolutions(carry_path: Path) -> None:
    """Leave the resolutions a watch keeps (``graph.kept_resolutions``) in the file beside its
    carry, once the carry was written (``carries.write_kept``: a round indexed something).

    A watch keeps them in memory and wrote none, so a ``kb index`` run after it (or the next
    watch) started from the last ``kb index`` run's file, older by every watched commit: on
    Django, after a watch that had indexed a new module, the next one-file commit's cold run built
    the whole call graph again (``call_edges`` 9.06 s) instead of resolving the 7 files its
    change reaches (4.59 s). The copy that writes the file is waited for (Django: 0.80-0.87 s),
    between rounds, where nobody waits for the watch: a copy still running while the watch's
    full collection (``Reclaimer``) touches every object would copy most of the heap."""
    kept = kept_now()
    if kept is not None:
        with ResolutionFile(resolutions_file(carry_path)) as file:
            file.save(kept)
