"""Estimated prices per million tokens, for the cost line of ``kb describe`` / ``kb mine``.

An estimate, not a bill: list prices by model-name prefix (longest prefix wins), overridden by
``KB_LLM_PRICE=IN,OUT`` (USD per million input and output tokens). Unknown models report no cost.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Price:
    """USD per million input and output tokens."""

    input_per_mtok: float
    output_per_mtok: float

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        """Estimated USD for these token counts."""
        total = input_tokens * self.input_per_mtok + output_tokens * self.output_per_mtok
        return round(total / 1_000_000, 6)


LIST_PRICES: dict[str, Price] = {
    "claude-opus-4": Price(15.0, 75.0),
    "claude-sonnet-4": Price(3.0, 15.0),
    "claude-haiku-4": Price(1.0, 5.0),
    "claude-3-5-haiku": Price(0.8, 4.0),
    "gpt-4o-mini": Price(0.15, 0.6),
    "gpt-4o": Price(2.5, 10.0),
    "gpt-4.1-mini": Price(0.4, 1.6),
    "gpt-4.1": Price(2.0, 8.0),
    "kb-stub": Price(0.0, 0.0),
}


def price_for(model: str, override: str | None = None) -> Price | None:
    """The price of ``model``: ``override`` (``IN,OUT``) when given, else the longest listed prefix."""
    if override:
        try:
            first, second = (float(v) for v in override.split(","))
        except ValueError:
            return None
        return Price(first, second)
    matches = [prefix for prefix in LIST_PRICES if model.startswith(prefix)]
    return LIST_PRICES[max(matches, key=len)] if matches else None
