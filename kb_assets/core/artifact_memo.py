"""Artifact ids remembered from one build of an extractor to the next, for a process that indexes
commit after commit (``kb watch``).

A one-file commit re-derives nearly every artifact of the commit before it: of Django's 11,090
import edges and 1,149 public names a handful change. Building an artifact (its grounding sorted
and checked, grounding and payload encoded as canonical JSON, two sha256) costs ~12 µs, ~0.15 s
of every watched commit in the forked copy whose results the import and public-API steps wait
for. A draft equal to the last build's draft of the same (kind, logical key) has that draft's
id: the same grounding edges in the same order, the same confidence, and a payload with the same
``marshal`` bytes (version 2: no back-references, so equal data gives equal bytes; unlike ``==``
they tell ``True`` from ``1`` and ``1.0``, as canonical JSON does). Its id and sorted grounding
are taken from the memo, and its grounding is still checked against the commit's occurrences
(``grounding.ArtifactBuilder``): the provenance invariant is proved on every commit, never
remembered.

A build reads one extractor's memo (``known``) and notes what it recalled and what it learned;
its ``Lesson`` (the new and changed drafts, the keys no longer drafted) is what a forked copy
hands back for the process that keeps the memo to apply (``kb_assets.indexing.artifact_memos``).
"""

from __future__ import annotations

import marshal
from collections.abc import Mapping
from dataclasses import dataclass

from kb_assets.core.extractors.base import Draft
from kb_assets.core.ids import GroundingRow
from kb_assets.core.models import JSON, Grounding

MARSHAL_VERSION = 2
"""``marshal`` format of the payload bytes compared: version 3 and later mark objects referenced
twice, which depends on who else holds them, so equal payloads could differ in bytes."""

Key = tuple[str, str]
"""A draft's (kind, logical key)."""


@dataclass(frozen=True, slots=True)
class Known:
    """One draft of the last build, and the id and sorted grounding it was given."""

    grounding: tuple[Grounding, ...]
    """The draft's grounding edges as it gave them (order and repeats included)."""
    payload: bytes
    confidence: float
    rows: tuple[GroundingRow, ...]
    """The edges as (span id, path, role), de-duplicated and sorted: what the id hashed."""
    checked: tuple[Grounding, ...]
    """The edges in the same order: the artifact's grounding."""
    artifact_id: str


@dataclass(frozen=True, slots=True)
class Lesson:
    """What one build of an extractor learned: the drafts it identified that its memo did not
    know (or knew otherwise), and the remembered keys it did not draft."""

    learned: dict[Key, Known]
    dropped: frozenset[Key]


def payload_bytes(payload: Mapping[str, JSON]) -> bytes | None:
    """The bytes a payload is compared by; None for one that is not plain data (never recalled)."""
    try:
        return marshal.dumps(payload, MARSHAL_VERSION)  # type: ignore[arg-type]  # any value, or ValueError
    except ValueError:
        return None


class ArtifactMemo:
    """One extractor's remembered drafts (``known``, read only) and what a build does with them."""

    __slots__ = ("known", "learned", "recalled", "used")

    def __init__(self, known: Mapping[Key, Known]) -> None:
        self.known = known
        self.learned: dict[Key, Known] = {}
        self.used: set[Key] = set()
        self.recalled: set[str] = set()
        """Ids given from ``known``: stored already, in the store the memo belongs to."""

    def recall(self, draft: Draft, payload: bytes | None) -> Known | None:
        """The remembered draft equal to ``draft`` (``payload``: its ``payload_bytes``), if any."""
        key = (draft.kind, draft.logical_key)
        self.used.add(key)
        known = self.known.get(key)
        if (
            known is None
            or payload is None
            or known.payload != payload
            or known.confidence != draft.confidence
            or known.grounding != draft.grounding
        ):
            return None
        self.recalled.add(known.artifact_id)
        return known

    def learn(self, draft: Draft, known: Known) -> None:
        """Note the id given to a draft ``recall`` did not know."""
        self.learned[(draft.kind, draft.logical_key)] = known

    def lesson(self) -> Lesson:
        """What this build learned, for the memo's keeper to apply."""
        return Lesson(self.learned, frozenset(self.known.keys() - self.used))
