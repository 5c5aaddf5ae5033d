"""How many tokens a piece of text costs a model, estimated offline, cl100k-style.

Budgets are only honest if they are counted the way a model counts. Real BPE tokenizers need their
vocabulary (megabytes, usually fetched from the network); this module has none. It runs cl100k's
own pre-tokenizer (the regular expression that splits text into pieces before byte-pair merging,
rewritten for Python's ``re``) and then estimates the tokens of each piece from its class and
length with a table fitted on reference counts of JSON knowledge units, Python source and English
prose. The error against the real cl100k encoder is measured by ``tests/test_mcp_budget.py`` on
stored samples: within a few percent on whole answers, never far below the truth (budgets lean
toward over-counting, so a trimmed answer fits).
"""

from __future__ import annotations

import functools
import json
import math
import re
from typing import Any

# cl100k_base's pre-tokenizer with \p{L} spelled [^\W\d_] and \p{N} spelled \d.
_PIECES = re.compile(
    r"""'(?i:[sdmt]|ll|ve|re)"""
    r"""|(?:[^\r\n\w]|_)?[^\W\d_]+"""
    r"""|\d{1,3}"""
    r"""| ?(?:[^\s\w]|_)+[\r\n]*"""
    r"""|\s*[\r\n]+"""
    r"""|\s+(?!\S)"""
    r"""|\s+"""
)

# Tokens of one lowercase "hump" of letters by its length (index = length; longer humps extrapolate).
# Fitted on reference cl100k counts: a word after a space is one token up to ~9 letters; a bare or
# symbol-led run (identifiers, JSON keys) splits sooner. CamelCase costs about one token per hump.
_SPACED = (0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.1, 1.1, 1.1, 1.25, 1.25, 1.4)
_BARE = (0.0, 1.0, 1.0, 1.05, 1.05, 1.1, 1.1, 1.25, 1.5, 1.6, 1.75, 2.0, 2.3)
_SLOPE = 0.25
_HUMPS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[^A-Za-z]+")
_LOWER_HEX = re.compile(r"[0-9a-f]+")


def _hump(n: int, table: tuple[float, ...]) -> float:
    """Estimated tokens of ``n`` letters of one hump, from ``table``."""
    if n < len(table):
        return table[n]
    return table[-1] + (n - len(table) + 1) * _SLOPE


def _letters(piece: str) -> float:
    """Estimated tokens of a letter run with its optional leading space or symbol (BPE merges it)."""
    spaced = piece[:1] == " "
    core = piece[1:] if spaced or not piece[:1].isalpha() else piece
    if not core.isascii():
        return max(1.0, len(core) * 0.8)  # non-Latin scripts cost about a token per character
    if len(core) > 2 and _LOWER_HEX.fullmatch(core):
        return max(1.0, len(core) / 2.2)  # hex fragments rarely form dictionary words
    total = 0.0
    for i, hump in enumerate(_HUMPS.findall(core)):
        total += _hump(len(hump), _SPACED if spaced and i == 0 else _BARE)
    return total


@functools.lru_cache(maxsize=1 << 16)
def _piece_tokens(piece: str) -> float:
    """Estimated tokens of one pre-tokenizer piece."""
    if piece[0].isalpha() or piece[1:2].isalpha():
        return _letters(piece)
    if piece[0].isdigit() or piece.isspace():
        return 1.0  # up to three digits, or one run of white space
    symbols = len(piece.strip())
    return max(1.0, (symbols - 1) / 1.8)


def estimate_tokens(text: str) -> int:
    """An offline estimate of ``text``'s cl100k token count (used to fit answers to a budget)."""
    if not text:
        return 0
    return math.ceil(sum(map(_piece_tokens, _PIECES.findall(text))))


def pieces(text: str) -> list[str]:
    """The cl100k pre-tokenizer pieces of ``text`` (exposed for tests and calibration)."""
    return list(_PIECES.findall(text))


def compact_json(data: Any) -> str:
    """The JSON text the tools send (compact, keys in model order): what token budgets count."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))
