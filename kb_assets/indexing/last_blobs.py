"""What a process read about the blobs of the last commit it indexed, kept for the next one.

A blob's parse in one store under one parser version never changes, and the next commit of a
watched branch has all but a few of the last one's blobs: what was read about them (decoded facts
for the program, span counts and gaps for the parse step's summary) is asked of the store again
only for the new blobs. Only the last commit's blobs are kept, so a long-running process holds
one commit's worth.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from sqlalchemy import Engine

from kb_assets.core.extractors.registry import parser_version

T = TypeVar("T")


class LastBlobs(Generic[T]):
    """One kind of answer about blobs, kept for the last commit's blobs of one store."""

    def __init__(self) -> None:
        self._scope: tuple[str, str] | None = None
        self._known: dict[str, T] = {}

    def get(
        self, engine: Engine, blob_ids: list[str], fetch: Callable[[list[str]], dict[str, T]]
    ) -> dict[str, T]:
        """The answer for each of ``blob_ids`` that has one, in their order: kept ones as they
        are, the others from ``fetch`` (given those missing). Only these blobs are kept after."""
        scope = (str(engine.url), parser_version())
        known = self._known if self._scope == scope else {}
        missing = [b for b in blob_ids if b not in known]
        fresh = fetch(missing) if missing else {}
        found = {b: known[b] if b in known else fresh[b] for b in blob_ids if b in known or b in fresh}
        self._scope, self._known = scope, found
        return found

    def holds(self, engine: Engine) -> bool:
        """Whether answers about some blobs of ``engine``'s store are kept."""
        return self._scope == (str(engine.url), parser_version()) and bool(self._known)

    def forget(self) -> None:
        """Keep nothing: the next ``get`` fetches every blob."""
        self._scope, self._known = None, {}
