"""The identifiers a piece of code really mentions: names and dotted chains, never words in strings
or comments.

The claim floor accepts a symbol only when the target's own code backs it; this module reads that
code with Python's own tokenizer, so a name that appears only in a docstring, a comment or a
string literal backs nothing. Keywords are not identifiers.
"""

from __future__ import annotations

import functools
import io
import keyword
import re
import textwrap
import tokenize

_RESERVED = frozenset(keyword.kwlist) | frozenset(keyword.softkwlist)
_SYMBOL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_FALLBACK = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:[ \t]*\.[ \t]*[A-Za-z_][A-Za-z0-9_]*)*")
_STRINGS_AND_COMMENTS = re.compile(r"(\"\"\".*?\"\"\"|'''.*?'''|\"[^\"\n]*\"|'[^'\n]*'|#[^\n]*)", re.DOTALL)


def normalize_symbol(raw: str) -> str | None:
    """A symbol as a model wrote it, reduced to a dotted identifier chain (None: not one).

    Surrounding whitespace, backticks and quotes and a trailing ``()`` are forgiven; nothing else.
    """
    text = raw.strip().strip("`'\"").strip()
    if text.endswith("()"):
        text = text[:-2]
    if not _SYMBOL.fullmatch(text) or any(part in _RESERVED for part in text.split(".")):
        return None
    return text


def dotted_suffixes(name: str) -> list[str]:
    """``a.b.c`` -> ``a.b.c``, ``b.c``, ``c``: the segment-aligned suffixes a claim may cite."""
    parts = name.split(".")
    return [".".join(parts[i:]) for i in range(len(parts))]


def dotted_prefixes(name: str) -> list[str]:
    """``a.b.c`` -> ``a``, ``a.b``, ``a.b.c``."""
    parts = name.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


@functools.lru_cache(maxsize=4096)
def code_chains(text: str) -> frozenset[str]:
    """Every maximal identifier chain (``orders.total``, ``self.prices``, ``Order``) in ``text``."""
    source = textwrap.dedent(text)
    try:
        return frozenset(_token_chains(source))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        stripped = _STRINGS_AND_COMMENTS.sub(" ", source)
        found = {re.sub(r"\s+", "", m) for m in _FALLBACK.findall(stripped)}
        return frozenset(c for c in found if not any(p in _RESERVED for p in c.split(".")))


def _token_chains(source: str) -> set[str]:
    """Chains from the token stream: NAME ('.' NAME)*, keywords excluded."""
    chains: set[str] = set()
    current: list[str] = []
    after_dot = False
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.NAME and tok.string not in _RESERVED:
            if current and not after_dot:
                chains.add(".".join(current))
                current = []
            current.append(tok.string)
            after_dot = False
        elif tok.type == tokenize.OP and tok.string == "." and current and not after_dot:
            after_dot = True
        elif tok.type in (tokenize.NL, tokenize.COMMENT) and after_dot:
            continue
        else:
            if current:
                chains.add(".".join(current))
            current, after_dot = [], False
    if current:
        chains.add(".".join(current))
    return chains
