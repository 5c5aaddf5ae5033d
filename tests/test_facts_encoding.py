"""The facts cache's encoding: what JSON would give back, read with one object per distinct string
across every blob of a load, the same bytes in any process, and named by the parser version."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from kb_assets.core import blobs
from kb_assets.core.blobs import analyze_blob, decode_facts, encode_facts
from kb_assets.core.extractors import registry
from kb_assets.core.extractors.registry import COLLECTORS, EXTRACTORS, parser_version
from kb_assets.core.models import JSON
from kb_assets.core.spans import ParseLimits

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


def _fixture_facts() -> list[Mapping[str, JSON]]:
    """The real facts of every file of the call-graph fixture, as the parse produces them."""
    files = sorted((FIXTURES / "calls_oracle" / "01-initial").rglob("*.py"))
    assert len(files) > 5
    return [
        analyze_blob(str(i), f.read_bytes(), EXTRACTORS, ParseLimits(), COLLECTORS).facts
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


def test_decodes_exactly_what_a_json_round_trip_gives() -> None:
    """Equal values, keys in the same (sorted) order, lists not tuples, keys as strings: the
    extractors see what they saw when the cache held JSON text."""
    for facts in _fixture_facts():
        text = json.dumps(facts, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        decoded = decode_facts(encode_facts(facts))
        assert decoded == json.loads(text)
        assert json.dumps(decoded, separators=(",", ":"), ensure_ascii=False) == text
    odd = {"b": [("x", 1), {"z": "a.b", "a": [None, True, 1.5, 2**70]}], "a": {3: "q"}, "é": ["中", [[""]]]}
    assert decode_facts(encode_facts(odd)) == {
        "a": {"3": "q"},
        "b": [["x", 1], {"a": [None, True, 1.5, 2**70], "z": "a.b"}],
        "é": ["中", [[""]]],
    }


def _through_json(facts: Mapping[str, JSON]) -> bytes:
    """``encode_facts`` as it was before the direct rebuild: the JSON round trip, then packed."""
    return blobs._packed(blobs._json_round_trip(facts))


def test_the_direct_rebuild_writes_the_bytes_of_the_json_round_trip() -> None:
    """The facts rebuilt directly (``_canonical``) are the bytes the JSON round trip gave, so no
    cached blob changes: for the fixture's real facts, for values the collector keeps elsewhere
    too (shared lists, ints other objects hold), and for what only JSON converts (a key that is
    not a string; an infinity, which comes back as ``json``'s own shared object), which takes
    the round trip itself."""
    held = [1000, 2**70, "x", -7]
    shared = ["a.b", 12345, held]
    plain = {"z": [shared, shared, (held, 3.25)], "a": {"k": held, "n": None, "t": True}, "é": [-0.0]}
    for facts in [*_fixture_facts(), plain, {"calls": {"s": [plain, plain]}}]:
        blobs._canonical(facts)  # no fallback: plain values only
        assert encode_facts(facts) == _through_json(facts)
    for converted in ({"a": {3: "q"}}, {"a": [float("inf"), float("nan")]}):
        with pytest.raises(blobs._NotPlainError):
            blobs._canonical(converted)
        assert encode_facts(converted) == _through_json(converted)


def test_equal_strings_are_one_object_across_blobs_and_nesting() -> None:
    """Keys, values and strings in nested lists of two separately decoded blobs: each distinct
    string is one object (made at run time, so not one the interpreter shared anyway)."""
    name = "".join(["pkg.", "mod.", "Thing"])
    data = encode_facts({"calls": {"s": [[name, 1, {"m": name}], [[name]]], name: "x"}})
    other = encode_facts({"symbols": {name: ["name", name]}})
    strings = _strings(decode_facts(data), []) + _strings(decode_facts(other), [])
    assert strings.count(name) == 6
    assert len({id(s) for s in strings if s == name}) == 1
    assert len({id(s) for s in strings if s == "name"}) == 1


def test_the_bytes_are_the_same_in_another_process() -> None:
    """Encoding the fixture's facts here and in a fresh interpreter gives the same bytes (what
    ``marshal`` writes must not depend on a process's reference counts or interned strings)."""
    here = [encode_facts(facts).hex() for facts in _fixture_facts()]
    assert [encode_facts(facts).hex() for facts in _fixture_facts()] == here
    script = (
        "import json, sys\n"
        "from tests.test_facts_encoding import _fixture_facts\n"
        "from kb_assets.core.blobs import encode_facts\n"
        "json.dump([encode_facts(f).hex() for f in _fixture_facts()], sys.stdout)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert json.loads(done.stdout) == here


def test_the_parser_version_names_the_encoding(monkeypatch: pytest.MonkeyPatch) -> None:
    """Another encoding is another parser version: each blob is parsed again, never misread."""
    before = parser_version()
    monkeypatch.setattr(registry, "FACTS_ENCODING", "json+zlib")
    assert parser_version() != before
