"""The one parse of a blob: spans, gaps and every extractor's and collector's file-local facts together.

This is the unit of work that runs in parallel and is cached by blob id, so it takes and returns
only plain, picklable data.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Mapping

from kb_assets.core.extractors.base import Collector, Extractor
from kb_assets.core.models import JSON, EncodedBlob, Gap, ParsedBlob
from kb_assets.core.spans import ParsedSource, ParseLimits, parse_source

FactsFunction = Callable[[ParsedSource], JSON]


def fact_functions(
    extractors: tuple[Extractor, ...], collectors: tuple[Collector, ...] = ()
) -> list[tuple[str, FactsFunction]]:
    """(facts id, collect) of every extractor, then every collector; ids must be unique."""
    pairs: list[tuple[str, FactsFunction]] = [(ex.extractor_id, ex.collect) for ex in extractors]
    pairs += [(c.collector_id, c.collect) for c in collectors]
    ids = [i for i, _ in pairs]
    if len(set(ids)) != len(ids):
        raise ValueError(f"facts ids must be unique across extractors and collectors: {sorted(ids)}")
    return pairs


def analyze_blob(
    blob_id: str,
    data: bytes,
    extractors: tuple[Extractor, ...],
    limits: ParseLimits,
    collectors: tuple[Collector, ...] = (),
) -> ParsedBlob:
    """Parse one blob and run every extractor's and collector's ``collect`` on it, keyed by id.

    A ``collect`` that fails on nesting becomes a gap; one that returns None stores nothing.
    """
    parsed, gaps = parse_source(data, limits)
    line_count = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    if parsed is None:
        return ParsedBlob(blob_id=blob_id, spans=(), gaps=gaps, line_count=line_count)
    facts: dict[str, JSON] = {}
    extra: list[Gap] = []
    for facts_id, collect in fact_functions(extractors, collectors):
        try:
            value = collect(parsed)
        except RecursionError:
            extra.append(Gap("", "too_deep", f"{facts_id}: nesting too deep to analyse", None, facts_id))
            continue
        if value is not None:
            facts[facts_id] = value
    return ParsedBlob(
        blob_id=blob_id, spans=parsed.spans, facts=facts, gaps=gaps + tuple(extra), line_count=line_count
    )


def encode_facts(facts: Mapping[str, JSON]) -> bytes:
    """Compact, deterministic bytes for the facts cache."""
    body = json.dumps(facts, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return zlib.compress(body.encode("utf-8"), 6)


def encode_blob(parsed: ParsedBlob) -> EncodedBlob:
    """``parsed`` with its facts encoded as the cache stores them (``encode_facts``)."""
    return EncodedBlob(
        blob_id=parsed.blob_id,
        spans=parsed.spans,
        facts=encode_facts(parsed.facts),
        gaps=parsed.gaps,
        line_count=parsed.line_count,
    )


def decode_facts(data: bytes) -> dict[str, JSON]:
    """Inverse of ``encode_facts``."""
    value: dict[str, JSON] = json.loads(zlib.decompress(data).decode("utf-8"))
    return value


class FactsDecoder:
    """``decode_facts`` for the many blobs of one load, with one copy of each repeated string.

    The facts of a commit repeat the same names over and over (Django: 750k strings, 110k
    distinct, plus every object key); ``json`` makes a new string object for each, so sharing them
    while decoding keeps a loaded program about 37 MiB smaller on Django for ~0.2 s of CPU. The
    values are equal to ``decode_facts``'s, keys in the same order: only their identity is shared.
    The decoder holds no reference cycle, so its table of strings is freed as soon as it is
    dropped, not at the next (rare, see ``collector``) collection.
    """

    def __init__(self) -> None:
        self._json = json.JSONDecoder(object_pairs_hook=_SharedStrings().object)

    def __call__(self, data: bytes) -> dict[str, JSON]:
        """The facts ``encode_facts`` turned into ``data``."""
        value: dict[str, JSON] = self._json.decode(zlib.decompress(data).decode("utf-8"))
        return value


class _SharedStrings:
    """The ``object_pairs_hook`` of a ``FactsDecoder``: builds each object with shared strings."""

    def __init__(self) -> None:
        self.strings: dict[str, str] = {}

    def object(self, pairs: list[tuple[str, JSON]]) -> dict[str, JSON]:
        """One decoded JSON object (its nested objects are built already, its lists not)."""
        shared = self.strings.setdefault
        out: dict[str, JSON] = {}
        for key, value in pairs:
            if type(value) is str:
                out[shared(key, key)] = shared(value, value)
                continue
            if type(value) is list:
                self.list(value)
            out[shared(key, key)] = value
        return out

    def list(self, items: list[JSON]) -> None:
        """Share the strings of a list and of the lists nested in it, in place."""
        shared = self.strings.setdefault
        for i, item in enumerate(items):
            if type(item) is str:
                items[i] = shared(item, item)
            elif type(item) is list:
                self.list(item)
