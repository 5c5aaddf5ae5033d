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
    "claude-fable-5-1": Price(10.0, 50.0),
    "claude-opus-5-5": Price(4.0, 20.0),
    "claude-opus-5": Price(5.0, 25.0),
    "claude-sonnet-5": Price(2.0, 10.0),
    "claude-sonnet-4": Price(3.0, 15.0),
    "claude-haiku-4-5": Price(1.0, 5.0),
    "gpt-4o-mini": Price(0.15, 0.6),
    "gpt-4o": Price(2.5, 10.0),
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
