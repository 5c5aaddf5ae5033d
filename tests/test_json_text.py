"""The encoders made once (``json_text``) write exactly what ``json.dumps`` writes with the same
options: artifact ids hash the canonical text and ``kb export``'s bytes are compared across
versions, so a single differing character would change every id or every export line."""

from __future__ import annotations

import json
import math
import threading

import pytest

from kb_assets.core.json_text import canonical_json, record_json

VALUES: list[object] = [
    None,
    True,
    False,
    0,
    -7,
    2**70,
    1.0,
    0.1,
    -2.5e-300,
    1e300,
    "",
    "plain",
    'quote " backslash \\ tab \t newline \n nul \x00 bell \x07',
    "unicode é ü 漢字 \U0001f600 \u2028 \ud800",
    [],
    {},
    ("a", "tuple", 3),
    [1, [2, [3, {"z": None, "a": [True, 1.5]}]]],
    {"b": 1, "a": 2, "é": 3, "A": 4, "_": 5, "10": 6, "9": 7},
    {
        "caller": "pkg.mod.Class.method",
        "callee": "pkg.other.func",
        "forms": ["import", "self_method"],
        "site_offsets": {"f" * 64: [0, 3, 12]},
    },
]


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_canonical_json_is_the_canonical_dumps(value: object) -> None:
    """The id-bearing text is ``json.dumps`` with sorted keys, no whitespace and real unicode."""
    expected = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    assert canonical_json(value) == expected


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_record_json_is_the_export_dumps(value: object) -> None:
    """An export line is ``json.dumps(record, sort_keys=True, ensure_ascii=False)``."""
    assert record_json(value) == json.dumps(value, sort_keys=True, ensure_ascii=False)


def test_what_json_cannot_say_is_refused_as_before() -> None:
    """Non-finite floats have no canonical text; objects JSON does not know are a ``TypeError``
    naming their type, as ``json.dumps`` raises; an export record may carry ``NaN`` as before."""
    for bad in (math.nan, math.inf, -math.inf, {"x": [math.nan]}):
        with pytest.raises(ValueError, match="JSON compliant"):
            canonical_json(bad)
    with pytest.raises(TypeError, match="set"):
        canonical_json({"x": {1, 2}})
    with pytest.raises(TypeError, match="bytes"):
        record_json([b"raw"])
    assert record_json({"x": math.nan}) == json.dumps({"x": math.nan}, sort_keys=True, ensure_ascii=False)


def test_the_shared_encoder_gives_each_thread_its_own_text() -> None:
    """One encoder serves the writer threads and forked copies at once: texts made concurrently
    are each the one ``json.dumps`` makes."""
    values = [{"n": i, "items": list(range(i % 50)), "name": f"v{i}"} for i in range(2000)]
    expected = [json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False) for v in values]
    results: dict[int, list[str]] = {}

    def encode(slot: int) -> None:
        results[slot] = [canonical_json(v) for v in values]

    threads = [threading.Thread(target=encode, args=(slot,)) for slot in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(results[slot] == expected for slot in range(4))
