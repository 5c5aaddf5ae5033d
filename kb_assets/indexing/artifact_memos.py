"""The artifact memos a watch keeps from one commit to the next (``core.artifact_memo``).

Only a process that indexes commit after commit keeps them (``remembering_artifacts``: ``kb
watch``); a ``kb index`` run would only pay for making them. A memo belongs to one store: the
ids it recalls are stored there already (artifacts are never deleted, and a build's lesson is
applied only once everything it built is stored), so a writer need not look them up again. The
extractors whose drafts are made on demand (the call edges) are carried instead (``carries``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa

from kb_assets.core.artifact_memo import ArtifactMemo, Key, Known, Lesson
from kb_assets.core.extractors.base import Extractor

_memos: dict[tuple[str, str, str], dict[Key, Known]] | None = None
"""While ``remembering_artifacts`` is active: (store url, extractor id, extractor version) -> what
that extractor's last build identified."""


@contextmanager
def remembering_artifacts() -> Iterator[None]:
    """Within: builds read and teach their extractor's memo, dropped on the way out."""
    global _memos  # noqa: PLW0603 - a process-wide setting, like ``kept_resolutions``
    previous, _memos = _memos, {}
    try:
        yield
    finally:
        _memos = previous


def memo_for(url: sa.URL, extractor: Extractor) -> ArtifactMemo | None:
    """A memo over what ``extractor``'s last build in the store at ``url`` identified (empty
    before one); None unless ``remembering_artifacts`` is active."""
    if _memos is None:
        return None
    return ArtifactMemo(_memos.get(_key(url, extractor), {}))


def apply(url: sa.URL, extractor: Extractor, lesson: Lesson | None) -> None:
    """Make ``lesson`` (a build's, once everything it built is stored) part of the memo."""
    if _memos is None or lesson is None:
        return
    known = _memos.setdefault(_key(url, extractor), {})
    for key in lesson.dropped:
        known.pop(key, None)
    known.update(lesson.learned)


def _key(url: sa.URL, extractor: Extractor) -> tuple[str, str, str]:
    return (str(url), extractor.extractor_id, extractor.version)
