"""JSON text from C encoders made once.

``json.dumps(value, **options)`` builds a ``JSONEncoder`` and, inside it, a new C encoder on every
call; for a small value that costs as much as the encoding. knowbase writes JSON text in two
styles by the hundred thousand (each artifact's payload and grounding rows for its id, each record
of ``kb export``), so each style's C encoder is made here once and called directly: the same text
as ``json.dumps`` with those options for every JSON value (a tuple is written as a list, as there).

The encoders keep no circular-reference markers, which a shared encoder could not keep safely
between threads: a payload or record is built from facts and is never circular (one would raise
``RecursionError`` rather than ``ValueError``).
"""

from __future__ import annotations

from _json import encode_basestring, make_encoder


def _not_json(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


_CANONICAL_ENCODER = make_encoder(None, _not_json, encode_basestring, None, ":", ",", True, False, False)
_RECORD_ENCODER = make_encoder(None, _not_json, encode_basestring, None, ": ", ", ", True, False, True)


def canonical_json(value: object) -> str:
    """Serialize JSON deterministically: sorted keys, no whitespace, real unicode, no NaN
    (``json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
    allow_nan=False)``). The text every artifact id hashes, so part of the identity rule: a change
    here goes with a bump of ``ids.ARTIFACT_ID_VERSION`` (a full Django index encodes ~200k
    payloads and grounding rows)."""
    return "".join(_CANONICAL_ENCODER(value, 0))


def record_json(value: object) -> str:
    """``json.dumps(value, sort_keys=True, ensure_ascii=False)``: one line of ``kb export`` or
    ``kb spans`` (Django's 88k export records: 0.73-0.78 s through ``json.dumps``, 0.56-0.61 s)."""
    return "".join(_RECORD_ENCODER(value, 0))
