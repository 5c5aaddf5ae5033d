"""Turning drafts into artifacts: the application half of the provenance invariant.

Nothing becomes an ``Artifact`` unless every grounding edge names a span that really occurs at
that path in the commit, and at least one such edge exists. The database enforces the same rule
again at COMMIT (``artifact_grounded_check``) for anything that bypasses this module.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Iterator

from kb_assets.core.artifact_memo import ArtifactMemo, Known, payload_bytes
from kb_assets.core.errors import DraftKindError, GroundingError, IdentityConflictError
from kb_assets.core.extractors.base import Draft
from kb_assets.core.ids import ArtifactIds, GroundingRow
from kb_assets.core.json_text import canonical_json
from kb_assets.core.models import Artifact, Grounding, Method
from kb_assets.core.program import Program
from kb_assets.core.program_memo import PerProgram


class Occurrences:
    """Whether a (path, span_id) pair occurs in the commit: each file's span ids are gathered the
    first time one of its pairs is asked for. A commit's run builds drafts for few files when its
    edges are mostly carried (a warm one-file Django commit: a few dozen drafts), and the set of
    all 58k pairs took 14-21 ms of each such commit to make."""

    __slots__ = ("_by_path", "_files")

    def __init__(self, program: Program) -> None:
        self._files = program.files
        self._by_path: dict[str, frozenset[str]] = {}

    def __contains__(self, pair: object) -> bool:
        if not isinstance(pair, tuple) or len(pair) != 2:
            return False
        path, span_id = pair
        spans = self._by_path.get(path)
        if spans is None:
            source = self._files.get(path)
            spans = frozenset(s.span_id for s in source.spans) if source is not None else frozenset()
            self._by_path[path] = spans
        return span_id in spans


def known_occurrences(program: Program) -> Occurrences:
    """The commit's (path, span_id) pairs, for validating grounding edges (remembered per program:
    every extractor of a commit validates against the same files)."""
    return _occurrences(program)


_occurrences: PerProgram[Occurrences] = PerProgram(Occurrences)


def check_grounding(draft: Draft, occurrences: Container[tuple[str, str]]) -> tuple[Grounding, ...]:
    """The draft's grounding, de-duplicated and sorted; raises if empty or pointing nowhere."""
    return _checked(draft, occurrences)[1]


def _checked(
    draft: Draft, occurrences: Container[tuple[str, str]]
) -> tuple[list[GroundingRow], tuple[Grounding, ...]]:
    """``check_grounding``, with the edges' rows (the same order): edges are de-duplicated and
    sorted as (span id, path, role) tuples, ``Grounding``'s own order and equality, because a
    tuple hashes and compares in C and a dataclass in Python code."""
    unique = {(g.span_id, g.path, g.role): g for g in draft.grounding}
    if not unique:
        raise GroundingError(draft.logical_key)
    rows = sorted(unique)
    _occurring(rows, draft.logical_key, occurrences)
    return rows, tuple(map(unique.__getitem__, rows))


def _occurring(
    rows: Iterable[GroundingRow], logical_key: str, occurrences: Container[tuple[str, str]]
) -> None:
    """Raise ``GroundingError`` unless each row's span occurs at its path in the commit."""
    for span_id, path, _ in rows:
        if (path, span_id) not in occurrences:
            raise GroundingError(logical_key, f"span {span_id[:12]} does not occur in {path}")


def build_artifacts(
    drafts: Iterable[Draft],
    *,
    extractor_id: str,
    extractor_version: str,
    program: Program,
    method: Method = Method.DETERMINISTIC,
    kind: str | None = None,
) -> list[Artifact]:
    """Give each draft its content-addressed id; sorted by (kind, logical_key) for determinism.

    The ids are made by one ``ArtifactIds``: drafts of one extractor share most grounding edges,
    and it encodes each edge once (same bytes hashed as ``ids.artifact_id``), from the rows the
    grounding check sorted."""
    built = ArtifactBuilder(extractor_id, extractor_version, program, method, kind).each(drafts)
    return sorted(built, key=lambda art: (art.kind, art.logical_key))


def artifact_batches(
    drafts: Iterable[Draft],
    *,
    extractor_id: str,
    extractor_version: str,
    program: Program,
    size: int,
    method: Method = Method.DETERMINISTIC,
    kind: str | None = None,
    memo: ArtifactMemo | None = None,
) -> Iterator[list[Artifact]]:
    """``build_artifacts`` a batch of ``size`` drafts at a time, in draft order, so a writer can
    store and drop each batch: the same artifacts (ids included), each once, but not sorted, and
    a logical-key conflict is only raised when its second draft is reached. With a ``memo``, a
    draft equal to one it remembers takes that draft's id (``artifact_memo``)."""
    batch: list[Artifact] = []
    builder = ArtifactBuilder(extractor_id, extractor_version, program, method, kind, memo=memo)
    for art in builder.each(drafts):
        batch.append(art)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


class ArtifactBuilder:
    """Turns the drafts of one extractor run into artifacts, one at a time, remembering the id of
    each (kind, logical key) so that a key seen again with another id is a conflict; with
    ``kind``, the one kind the extractor declares, a draft of another kind is refused; with a
    ``memo`` (the extractor's, in one store), drafts it remembers keep their ids."""

    def __init__(
        self,
        extractor_id: str,
        extractor_version: str,
        program: Program,
        method: Method,
        kind: str | None = None,
        *,
        memo: ArtifactMemo | None = None,
    ) -> None:
        self.extractor_id = extractor_id
        self.kind = kind
        self.extractor_version = extractor_version
        self.method = method
        self.occurrences = known_occurrences(program)
        self.ids = ArtifactIds()
        self.seen: dict[tuple[str, str], str] = {}
        self.memo = memo

    def __call__(self, draft: Draft) -> tuple[Artifact, bool]:
        """The draft's artifact, and whether it is the first of its (kind, logical key).

        Raises ``GroundingError`` for a draft grounded nowhere, ``IdentityConflictError`` when its
        (kind, logical key) was built before with another id, ``DraftKindError`` for a draft of
        a kind other than ``kind``."""
        if self.kind is not None and draft.kind != self.kind:
            raise DraftKindError(self.extractor_id, self.kind, draft.kind, draft.logical_key)
        artifact_id, grounding, payload_json = self._identified(draft)
        key = (draft.kind, draft.logical_key)
        known = self.seen.get(key)
        if known is None:
            self.seen[key] = artifact_id
        elif known != artifact_id:
            raise IdentityConflictError("logical key", f"{draft.kind} {draft.logical_key}")
        art = Artifact(
            artifact_id=artifact_id,
            kind=draft.kind,
            logical_key=draft.logical_key,
            extractor_id=self.extractor_id,
            extractor_version=self.extractor_version,
            method=self.method,
            confidence=draft.confidence,
            payload=draft.payload,
            grounding=grounding,
            payload_json=payload_json,
        )
        return art, known is None

    def _identified(self, draft: Draft) -> tuple[str, tuple[Grounding, ...], str | None]:
        """The draft's id and checked grounding: remembered by the memo (the grounding checked
        against this commit's occurrences all the same), else made, with the payload's canonical
        JSON text that went into the id (for the store's row)."""
        memo = self.memo
        payload = payload_bytes(draft.payload) if memo is not None else None
        known = memo.recall(draft, payload) if memo is not None else None
        if known is not None:
            _occurring(known.rows, draft.logical_key, self.occurrences)
            return known.artifact_id, known.checked, None
        rows, grounding = _checked(draft, self.occurrences)
        payload_json = canonical_json(draft.payload)
        artifact_id = self.ids.of_rows(
            rows,
            logical_key=draft.logical_key,
            extractor_id=self.extractor_id,
            extractor_version=self.extractor_version,
            payload_json=payload_json,
        )
        if memo is not None and payload is not None:
            learned = Known(draft.grounding, payload, draft.confidence, tuple(rows), grounding, artifact_id)
            memo.learn(draft, learned)
        return artifact_id, grounding, payload_json

    def each(self, drafts: Iterable[Draft]) -> Iterator[Artifact]:
        """The artifact of each (kind, logical key) once, in draft order (a repeated draft with the
        same id is skipped; one with another id raises ``IdentityConflictError``)."""
        for draft in drafts:
            art, first = self(draft)
            if first:
                yield art
