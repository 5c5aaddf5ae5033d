"""``FactsDecoder``: the facts ``decode_facts`` gives, with repeated strings shared across blobs."""

from __future__ import annotations

import gc
import json
import weakref
from pathlib import Path

from kb_assets.core.blobs import FactsDecoder, analyze_blob, decode_facts, encode_facts
from kb_assets.core.extractors.registry import COLLECTORS, EXTRACTORS
from kb_assets.core.models import JSON
from kb_assets.core.spans import ParseLimits

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _encoded_fixture_facts() -> list[bytes]:
    """The real facts of every file of the call-graph fixture, as the cache stores them."""
    files = sorted((FIXTURES / "calls_oracle" / "01-initial").rglob("*.py"))
    assert len(files) > 5
    return [
        encode_facts(analyze_blob(str(i), f.read_bytes(), EXTRACTORS, ParseLimits(), COLLECTORS).facts)
        for i, f in enumerate(files)
    ]


def _strings(value: JSON, out: list[str]) -> list[str]:
    """Every string of a decoded value, keys included, in document order."""
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, list):
        for item in value:
            _strings(item, out)
    elif isinstance(value, dict):
        for key, item in value.items():
            out.append(key)
            _strings(item, out)
    return out


def test_decodes_exactly_what_decode_facts_decodes() -> None:
    """Equal values with the same key order (the same JSON text once re-encoded)."""
    decode = FactsDecoder()
    for data in _encoded_fixture_facts():
        shared, plain = decode(data), decode_facts(data)
        assert shared == plain
        assert json.dumps(shared) == json.dumps(plain)


def test_equal_strings_are_one_object_across_blobs_and_nesting() -> None:
    """Keys, values, strings in nested lists: each distinct string exists once per decoder."""
    data = encode_facts({"calls": {"s": [["a.b", 1, {"m": "a.b"}], [["a.b"]]], "name": "a.b"}})
    other = encode_facts({"symbols": {"a.b": ["name", "a.b"]}})
    decode = FactsDecoder()
    strings = _strings(decode(data), []) + _strings(decode(other), [])
    by_value: dict[str, str] = {}
    for s in strings:
        assert by_value.setdefault(s, s) is s
    assert strings.count("a.b") == 6
    assert strings.count("name") == 2
    plain = _strings(decode_facts(data), [])
    assert len({id(s) for s in plain if s == "a.b"}) > 1  # what json alone does: one object per use


def test_a_dropped_decoder_is_freed_without_the_cyclic_collector() -> None:
    """No reference cycle keeps a used decoder (and its table of strings) alive until the next
    collection, which an index run makes rare."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        decode = FactsDecoder()
        decode(encode_facts({"calls": {"name": ["a.b", "a.b"]}}))
        ref = weakref.ref(decode)
        del decode
        assert ref() is None
    finally:
        if enabled:
            gc.enable()
