"""Content-addressed identities. Locked: change a rule only together with its version constant.

``span_id`` names a piece of code independently of where it lives (no path, no offsets), so a
moved file or a reformatted repository keeps its ids. ``artifact_id`` names a unit of knowledge by
what grounds it and what it says, so the same id always means the same stored record.
"""

from __future__ import annotations

import hashlib
import operator
from collections.abc import Iterable, Mapping

from kb_assets.core.errors import GroundingError
from kb_assets.core.json_text import canonical_json
from kb_assets.core.models import JSON, Grounding, SpanKind

NORMALIZATION_VERSION = "1"
"""Version of the fingerprint normalization; part of every span_id."""

ARTIFACT_ID_VERSION = "1"
"""Version of the artifact identity rule; part of every artifact_id."""

_SEP = b"\x00"


def is_id(value: str) -> bool:
    """Tell whether a string is a knowbase id as ``hexdigest`` spells one: 64 lowercase hex digits
    and nothing else (no upper case, no trailing newline, which ``^...$`` used to let through)."""
    return digest_of(value) is not None


def digest_of(value: str) -> bytes | None:
    """The 32 bytes of the id ``value`` spells, or None if it is not an id (``is_id``).

    Checked by the round trip through the bytes: 0.09 us against a regular expression's 0.42, and
    the store, which keeps the bytes (``kb_resources.store.hex_ids``), gets them from the check."""
    if not isinstance(value, str) or len(value) != 64:
        return None
    try:
        digest = bytes.fromhex(value)
    except ValueError:
        return None
    return digest if digest.hex() == value else None


class SortedIds(tuple[str, ...]):
    """Ids ``sorted_distinct`` made or found sorted and distinct: given to it again, they are
    taken as they are. A run's staged ids are cut into entry sets and digested into its data
    version, and comparing Django's 76k call-edge ids' neighbours took 3 ms each time on fresh
    strings, 10-20 ms in a watch, whose ids lie scattered over its heap."""

    __slots__ = ()


def sorted_distinct(ids: Iterable[str]) -> SortedIds:
    """``ids`` sorted, each once. Ids already so (a run stages them sorted) are recognised by one
    comparison of neighbours in C and kept as they are: ~2 instead of ~8 ms for Django's 76k
    call-edge ids through ``dict.fromkeys`` and a sort of sorted input; ids this function
    answered before (``SortedIds``) are not compared again."""
    if type(ids) is SortedIds:
        return ids
    given = ids if isinstance(ids, tuple) else tuple(ids)
    return SortedIds(given if all(map(operator.lt, given, given[1:])) else sorted(set(given)))


def span_hasher(lang: str, kind: SpanKind, fq_symbol_path: str) -> hashlib._Hash:
    """Start a span_id hash; the caller feeds the fingerprint so large ones need not be joined."""
    h = hashlib.sha256()
    for part in (NORMALIZATION_VERSION, lang, kind.value, fq_symbol_path):
        h.update(part.encode("utf-8"))
        h.update(_SEP)
    return h


def span_id(lang: str, kind: SpanKind, fq_symbol_path: str, fingerprint: str) -> str:
    """sha256 over (NORMALIZATION_VERSION, lang, span_kind, fq_symbol_path, fingerprint)."""
    h = span_hasher(lang, kind, fq_symbol_path)
    h.update(fingerprint.encode("utf-8"))
    return h.hexdigest()


def content_digest(payload: Mapping[str, JSON], grounding: Iterable[Grounding]) -> str:
    """Digest of what an artifact says and where it is grounded (paths and roles included).

    Folding this into the artifact id makes "same id, different payload" impossible by
    construction, even when a payload names dotted paths that follow a file move.
    """
    return ArtifactIds().content_digest(canonical_json(payload), grounding_rows(grounding))


def artifact_id(
    *,
    logical_key: str,
    extractor_id: str,
    extractor_version: str,
    grounding: Iterable[Grounding],
    payload: Mapping[str, JSON],
    prompt_version: str | None = None,
    model_id: str | None = None,
) -> str:
    """sha256 over the byte-sorted, de-duplicated grounding span ids, the logical key, the extractor
    id/version (+ prompt version and model id for model-backed ones) and the content digest.

    Raises ``GroundingError`` for an artifact with no grounding: such a thing has no identity.
    """
    return ArtifactIds().of_rows(
        grounding_rows(grounding),
        logical_key=logical_key,
        extractor_id=extractor_id,
        extractor_version=extractor_version,
        payload_json=canonical_json(payload),
        prompt_version=prompt_version,
        model_id=model_id,
    )


GroundingRow = tuple[str, str, str]
"""A grounding edge as (span id, path, role): ``Grounding``'s fields, hashed and sorted in C."""


def grounding_rows(grounding: Iterable[Grounding]) -> list[GroundingRow]:
    """The grounding edges as rows, de-duplicated and in ``Grounding`` order."""
    return sorted({(g.span_id, g.path, g.role) for g in grounding})


class ArtifactIds:
    """``artifact_id`` and ``content_digest`` for a batch of artifacts (one ``build_artifacts``
    call): the same rule and the same bytes, but each grounding edge's JSON text is made once.

    The canonical JSON of ``{"grounding": rows, "payload": payload}`` is, byte for byte, the
    encoder's text of each row joined by commas inside the fixed frame written below (sorted keys,
    no whitespace; JSON text is compositional). A commit's artifacts share most of their edges
    (tens of thousands of call edges name a few thousand caller and callee spans), and encoding
    the rows was half of the encoding work; the memo only ever holds texts of this batch.
    """

    def __init__(self) -> None:
        self._texts: dict[GroundingRow, str] = {}

    def content_digest(self, payload_json: str, rows: list[GroundingRow]) -> str:
        """``content_digest`` of the payload's ``canonical_json`` text and sorted, de-duplicated
        rows (the caller keeps the text: the store's row is made of it)."""
        texts = self._texts
        parts = []
        for row in rows:
            text = texts.get(row)
            if text is None:
                text = texts[row] = canonical_json(row)
            parts.append(text)
        body = '{"grounding":[' + ",".join(parts) + '],"payload":' + payload_json + "}"
        return hashlib.sha256(body.encode("utf-8")).hexdigest()

    def of_rows(
        self,
        rows: list[GroundingRow],
        *,
        logical_key: str,
        extractor_id: str,
        extractor_version: str,
        payload_json: str,
        prompt_version: str | None = None,
        model_id: str | None = None,
    ) -> str:
        """``artifact_id`` of grounding rows already de-duplicated and sorted (``grounding_rows``;
        ``build_artifacts`` has them from its own check and need not sort them twice), and of the
        payload's ``canonical_json`` text."""
        if not rows:
            raise GroundingError(logical_key)
        # The rows are sorted by span id first, so their distinct span ids come out sorted (str
        # order is byte order for ASCII, and anything else fails to encode, as it always did).
        span_ids = "\x00".join(dict.fromkeys(row[0] for row in rows)).encode("ascii")
        head = (
            ARTIFACT_ID_VERSION,
            extractor_id,
            extractor_version,
            logical_key,
            prompt_version or "",
            model_id or "",
        )
        # Hashed in one call: each part followed by NUL, exactly the bytes of one update per part and
        # per separator (UTF-8 of a join is the join of the UTF-8s), without ~20 calls per artifact.
        hashed = b"".join(
            (
                "\x00".join(head).encode("utf-8"),
                _SEP,
                span_ids,
                _SEP,
                self.content_digest(payload_json, rows).encode("ascii"),
            )
        )
        return hashlib.sha256(hashed).hexdigest()
