"""A commit's parse split into shards, each parsed by its own process or machine ahead of the index.

The parse is the one part of a full index that divides cleanly: a blob's spans and facts depend on
its bytes alone, and they are cached by blob id in the store (``parse.ensure_parsed``). So N
workers that share the store can each parse a disjoint share of the commit's blobs, and the
``kb index`` that follows finds every blob parsed and only loads it (``F files (0 parsed, F
reused)``). The extractors and the publish step still run once per commit over the whole program:
imports, public APIs and call graphs cross any split of the files.

Shards are drawn by blob id, not by path: a file copied to several paths (every empty
``__init__.py``) is one blob, parsed once by one shard, and two shards never race to write the
same blob's rows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlalchemy import Engine

from kb_assets.core.errors import BadInputError
from kb_assets.core.spans import ParseLimits
from kb_assets.indexing.head_start import readable_blobs
from kb_assets.indexing.parse import ensure_parsed
from kb_resources.git.repo import GitRepo

_SHARD = re.compile(r"(\d+)/(\d+)")


@dataclass(frozen=True, slots=True)
class Shard:
    """Shard ``index`` of ``count`` (``0/1``: every blob)."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``K/N`` with ``0 <= K < N``, else a bad-input error naming what was given."""
        found = _SHARD.fullmatch(text.strip())
        if found is None:
            raise BadInputError(f"--shard takes K/N (shard K of N, counted from 0, e.g. 0/4), got {text!r}")
        index, count = int(found.group(1)), int(found.group(2))
        if count < 1:
            raise BadInputError(f"--shard {text}: N, the number of shards, must be at least 1")
        if index >= count:
            raise BadInputError(f"--shard {text}: K counts from 0 and must be below N (0 to {count - 1})")
        return cls(index, count)

    def holds(self, blob_id: str) -> bool:
        """Whether the blob is this shard's: its id's first 64 bits modulo the count (a blob id is
        a hash, so shards come out even in number of blobs; the same in every process)."""
        return int(blob_id[:16], 16) % self.count == self.index

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


@dataclass(frozen=True, slots=True)
class PreParsed:
    """What one shard's parse found and did."""

    blobs: int
    """Distinct readable ``.py`` blobs of the commit (every shard)."""
    in_shard: int
    """Those this shard holds."""
    parsed: int
    """Those of the shard this run parsed; the rest were cached already (by an earlier run, an
    index of another commit or branch, or a shard that shared a blob's parse)."""


def pre_parse(
    repo: GitRepo, engine: Engine, sha: str, shard: Shard, *, limits: ParseLimits, workers: int
) -> PreParsed:
    """Parse and cache the shard's blobs of the commit that no run has cached yet.

    The blobs are listed from git (the commit need not be recorded in the store yet) with the
    same rule as the index's parse: regular and executable ``.py`` entries. Nothing of the commit
    itself is written (no files, occurrences or gaps): only the content-addressed blob cache, which
    any run may fill, so a shard that fails or is killed leaves nothing an index could misread."""
    blob_ids = list(readable_blobs(repo, sha))
    mine = [b for b in blob_ids if shard.holds(b)]
    parsed = ensure_parsed(repo, engine, mine, limits=limits, workers=workers, keep=False)
    return PreParsed(blobs=len(blob_ids), in_shard=len(mine), parsed=len(parsed))
