"""The one parse of a blob: spans, gaps and every extractor's and collector's file-local facts together.

This is the unit of work that runs in parallel and is cached by blob id, so it takes and returns
only plain, picklable data.
"""

from __future__ import annotations

import json
import marshal
import math
import sys
import zlib
from collections.abc import Callable, Mapping
from typing import Any

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


FACTS_ENCODING = f"marshal{marshal.version}+zlib"
"""How ``encode_facts`` stores facts; part of ``parser_version``, so a change re-parses each blob
once instead of misreading the cache."""


FACTS_ZLIB_LEVEL = 1
"""How hard ``encode_facts`` compresses: any level decodes the same way, so this is not part of
``FACTS_ENCODING``."""


def encode_facts(facts: Mapping[str, JSON]) -> bytes:
    """Compact, deterministic bytes for the facts cache, which ``decode_facts`` reads back fast.

    The value is first made exactly what JSON would give back (keys sorted, tuples as lists, keys
    as strings), then every string is interned before ``marshal`` writes it: ``marshal`` records
    interned strings as such, and reading them back interns them again, so the many blobs of one
    program share one object per distinct string (Django: 750k strings, 110k distinct; ~40 MiB
    of a loaded program) without a Python-level pass at load time. Loading Django's facts takes
    ~0.5 s this way against ~1.1 s for JSON with its strings shared by a decoder hook. The cost is
    here instead, once per blob ever, in the parse workers. The bytes are compressed at zlib's
    fastest level (``FACTS_ZLIB_LEVEL``): Django's 17.5 MB of marshalled facts take 0.17 s of the
    workers' CPU instead of 0.45 s at the default level, for 5.5 MB stored instead of 4.7 MB.
    """
    return _packed(canonical_facts(facts))


def canonical_facts(facts: Mapping[str, JSON]) -> JSON:
    """What ``decode_facts(encode_facts(facts))`` gives back, without the bytes in between (the
    blob-cache gate compares a fresh parse's facts with the cache's this way)."""
    try:
        return _canonical(facts)
    except _NotPlainError:
        return _json_round_trip(facts)


def _json_round_trip(facts: Mapping[str, JSON]) -> JSON:
    """What JSON gives back for ``facts``, every string interned: the definition ``_canonical``
    builds directly, and the way for values it does not rebuild."""
    text = json.dumps(facts, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    value: JSON = json.loads(text, object_pairs_hook=_interned_object)
    return value


def _packed(value: JSON) -> bytes:
    """The cache's bytes of a canonical value (``FACTS_ENCODING``)."""
    return zlib.compress(marshal.dumps(value, marshal.version), FACTS_ZLIB_LEVEL)


class _NotPlainError(Exception):
    """A value ``_canonical`` does not rebuild itself (a key that is not a string, a type JSON
    converts in its own way): the facts take the JSON round trip instead."""


def _canonical(value: object) -> JSON:
    """Exactly the object graph the JSON round trip of ``encode_facts`` gives back, built directly
    (~2.5x faster: Django's facts took 1.2 s of the parse workers' CPU through JSON text).

    Exactly, because ``marshal`` writes what it sees: a string is written once and referenced
    after if it is interned (here every one is, as the decoder hook interns them), but any other
    object is written as a back-reference only if its reference count is above one when
    ``marshal`` reaches it. So every container is new (held by its parent alone), every int
    outside CPython's shared small ints (-5..256) is a new object, as ``int(text)`` makes (``+
    0`` makes one; returning the collector's own int would make the bytes depend on who else
    holds it), a finite float is remade from its text as ``json`` does, keys are sorted, tuples
    become lists. Anything else raises ``_NotPlainError``; ``tests/test_facts_encoding.py`` compares
    the two ways byte for byte, in a fresh process too.
    """
    if type(value) is str:
        return sys.intern(value)
    if type(value) is dict:
        return _canonical_dict(value)
    if type(value) is list or type(value) is tuple:
        return _canonical_list(value)
    if type(value) is int:
        return value + 0
    if value is None or type(value) is bool:
        return value
    if type(value) is float and math.isfinite(value):
        return float(repr(value))
    raise _NotPlainError  # also infinities and NaN: ``json`` gives back its own shared constants


def _canonical_list(items: list[Any] | tuple[Any, ...]) -> list[JSON]:
    """``_canonical`` of a list or tuple, with its commonest items (strings, ints, lists) done
    here rather than by a call each: Django's facts 0.67-0.73 -> 0.51-0.56 s, the same bytes."""
    out: list[JSON] = []
    append = out.append
    for item in items:
        kind = type(item)
        if kind is str:
            append(sys.intern(item))
        elif kind is int:
            append(item + 0)
        elif kind is list or kind is tuple:
            append(_canonical_list(item))
        else:
            append(_canonical(item))
    return out


def _canonical_dict(value: dict[Any, Any]) -> dict[str, JSON]:
    """``_canonical`` of a dict: keys sorted and interned, values as ``_canonical_list`` does them."""
    if any(type(key) is not str for key in value):
        raise _NotPlainError
    out: dict[str, JSON] = {}
    for key in sorted(value):  # all strings, checked above
        item = value[key]
        kind = type(item)
        name = sys.intern(key)
        if kind is str:
            out[name] = sys.intern(item)
        elif kind is int:
            out[name] = item + 0
        elif kind is list or kind is tuple:
            out[name] = _canonical_list(item)
        else:
            out[name] = _canonical(item)
    return out


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
    """Inverse of ``encode_facts``; repeated strings come back as one interned object each."""
    # The bytes are the store's own parse cache, written by ``encode_facts``: nothing the MCP
    # server reads, and whoever can rewrite them can rewrite the knowledge itself.
    value: dict[str, JSON] = marshal.loads(zlib.decompress(data))  # noqa: S302
    return value


def _interned_object(pairs: list[tuple[str, JSON]]) -> dict[str, JSON]:
    """A decoded JSON object with its keys and strings interned (its nested objects already are)."""
    out: dict[str, JSON] = {}
    for key, value in pairs:
        if type(value) is str:
            out[sys.intern(key)] = sys.intern(value)
            continue
        if type(value) is list:
            _intern_list_items(value)
        out[sys.intern(key)] = value
    return out


def _intern_list_items(items: list[JSON]) -> None:
    """Intern the strings of a list and of the lists nested in it, in place (objects in it are
    interned already: ``json`` builds them bottom-up through ``_interned_object``)."""
    for i, item in enumerate(items):
        if type(item) is str:
            items[i] = sys.intern(item)
        elif type(item) is list:
            _intern_list_items(item)
