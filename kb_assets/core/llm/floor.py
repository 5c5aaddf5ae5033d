"""The semantic grounding floor: a model's claim survives only if the target's own spans back it.

The rule (README, "Descriptions and decisions"). A claim survives when its text is not empty, it
names at least one symbol, and EVERY symbol is backed by at least one span of the target's
grounding. A symbol is first normalized (``normalize_symbol``: surrounding whitespace, backticks,
quotes and a trailing ``()`` are forgiven; anything that is not a dotted identifier chain, or
contains a keyword, backs nothing). A grounding span G (file path P, module M) backs a name N when
N is a segment-aligned dotted suffix (``shop.orders.total``, ``orders.total``, ``total``) of:

1. G's own dotted path (``M.Qual``; the module span is ``M``);
2. the dotted path of any span defined inside G in the same file (a class backs its methods, a
   module span every definition of the file);
3. any identifier or dotted chain written in G's code, or a prefix of one (tokens of Python's own
   tokenizer: names in strings, comments and docstrings do not count; keywords never do);
4. what such a chain resolves to from module M through the commit's symbol table (imports,
   aliases and re-exports followed), e.g. ``apply_discount`` written in ``shop.orders`` backs
   ``shop.pricing.apply_discount``.

So a made-up name, a real name the target's code neither defines nor mentions, and a claim with
no symbol are all dropped. The spans that back a surviving claim's symbols are its ``span_ids``.
Pure: the caller supplies the code text and a resolver; nothing here reads git or the store.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from kb_assets.core.llm.identifiers import code_chains, dotted_prefixes, dotted_suffixes, normalize_symbol
from kb_assets.core.llm.reply import Claim, Reply
from kb_assets.core.models import JSON, Span, SpanKind
from kb_assets.core.spans import MODULE_PATH

MAX_CLAIMS = 20
"""Claims beyond this many are dropped unread (a reply is one paragraph and a few statements)."""

CONFIDENCE_CEILING = 0.8
"""A model-backed unit's confidence: this times the fraction of its offered claims that survived."""

Resolver = Callable[[str, str], str | None]
"""(module, dotted chain as written there) -> the dotted path it means, or None."""


@dataclass(frozen=True, slots=True)
class SpanText:
    """A grounding span of a target with what the floor needs: where it is, what it is, its code."""

    span_id: str
    path: str
    module: str | None
    kind: SpanKind
    fq_symbol_path: str
    start_line: int
    end_line: int
    text: str


@dataclass(frozen=True, slots=True)
class KeptClaim:
    """A claim that survived, with the spans that back its symbols."""

    text: str
    symbols: tuple[str, ...]
    span_ids: tuple[str, ...]

    def as_json(self) -> dict[str, JSON]:
        """The stored form (CONTRACT.md: ``{text, symbols, span_ids}``)."""
        return {"text": self.text, "symbols": list(self.symbols), "span_ids": list(self.span_ids)}


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the floor decided about one reply."""

    kept: tuple[KeptClaim, ...]
    offered: int
    dropped: tuple[tuple[Claim, str], ...]
    """Each dropped claim with the reason (``no_symbols``, ``empty_text``, ``unbacked:SYM``, ...)."""

    @property
    def confidence(self) -> float:
        """``CONFIDENCE_CEILING`` times the surviving fraction (always < 1.0)."""
        return round(CONFIDENCE_CEILING * len(self.kept) / self.offered, 4) if self.offered else 0.0


def span_dotted(module: str | None, fq_symbol_path: str) -> str | None:
    """The dotted path of a span (a module span is its module; import spans have none)."""
    if fq_symbol_path == MODULE_PATH:
        return module
    if fq_symbol_path.startswith("<"):
        return None
    return f"{module}.{fq_symbol_path}" if module else fq_symbol_path


class Floor:
    """The floor over one commit: ``file_spans`` (every span of each file) and a ``resolver``.

    Backed names are computed once per span occurrence and reused by every target grounded on it.
    """

    def __init__(self, file_spans: Mapping[str, Sequence[Span]], resolver: Resolver | None) -> None:
        self._file_spans = file_spans
        self._resolver = resolver
        self._names: dict[tuple[str, str, int, int], frozenset[str]] = {}
        self._resolved: dict[tuple[str, str], str | None] = {}

    def names(self, span: SpanText) -> frozenset[str]:
        """Every name ``span`` backs (rules 1-4 of the module docstring, suffixes included)."""
        key = (span.span_id, span.path, span.start_line, span.end_line)
        found = self._names.get(key)
        if found is None:
            found = frozenset(s for name in self._raw_names(span) for s in dotted_suffixes(name))
            self._names[key] = found
        return found

    def validate(self, reply: Reply, spans: Sequence[SpanText]) -> Verdict:
        """Keep the claims every symbol of which the target's ``spans`` back; say why others went."""
        kept: list[KeptClaim] = []
        dropped: list[tuple[Claim, str]] = []
        for index, claim in enumerate(reply.claims):
            if index >= MAX_CLAIMS:
                dropped.append((claim, "over_limit"))
                continue
            outcome = self.judge(claim, spans)
            if isinstance(outcome, str):
                dropped.append((claim, outcome))
            elif outcome not in kept:
                kept.append(outcome)
        return Verdict(kept=tuple(kept), offered=len(reply.claims), dropped=tuple(dropped))

    def judge(self, claim: Claim, spans: Sequence[SpanText]) -> KeptClaim | str:
        """The kept claim, or the reason it is dropped."""
        if not claim.text:
            return "empty_text"
        symbols: list[str] = []
        for raw in claim.symbols:
            symbol = normalize_symbol(raw)
            if symbol is None:
                return f"not_a_symbol:{raw[:60]}"
            if symbol not in symbols:
                symbols.append(symbol)
        if not symbols:
            return "no_symbols"
        backing: set[str] = set()
        for symbol in symbols:
            backers = {s.span_id for s in spans if symbol in self.names(s)}
            if not backers:
                return f"unbacked:{symbol}"
            backing |= backers
        return KeptClaim(text=claim.text, symbols=tuple(symbols), span_ids=tuple(sorted(backing)))

    def _raw_names(self, span: SpanText) -> set[str]:
        names: set[str] = set()
        own = span_dotted(span.module, span.fq_symbol_path)
        if own:
            names.add(own)
        for inner in self._file_spans.get(span.path, ()):
            if span.start_line <= inner.start_line and inner.end_line <= span.end_line:
                dotted = span_dotted(span.module, inner.fq_symbol_path)
                if dotted:
                    names.add(dotted)
        for chain in code_chains(span.text):
            for prefix in dotted_prefixes(chain):
                names.add(prefix)
                target = self._resolve(span.module, prefix)
                if target:
                    names.add(target)
        return names

    def _resolve(self, module: str | None, chain: str) -> str | None:
        if module is None or self._resolver is None:
            return None
        key = (module, chain)
        if key not in self._resolved:
            self._resolved[key] = self._resolver(module, chain)
        return self._resolved[key]
