"""The offline token estimate against exact cl100k counts, and the pure pieces of the MCP server.

``fixtures/token_samples`` holds real tool answers (JSON from the server over an indexed Django),
English prose and Python source, with their exact cl100k_base token counts in ``counts.json``
(computed once, offline, with the ``bpe-openai`` package's exact BPE; regenerate them with it if a
sample changes). The estimator needs no vocabulary, so these counts are the evidence that it is
tokenizer-compatible.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kb_mcp.budget import estimate_tokens, pieces

SAMPLES = Path(__file__).resolve().parent.parent / "fixtures" / "token_samples"
COUNTS: dict[str, int] = json.loads((SAMPLES / "counts.json").read_text())["counts"]
MAX_ERROR = 0.06


def _text(name: str) -> str:
    """A sample's text (``file:N`` is line N of a JSON-lines file)."""
    file, _, line = name.partition(":")
    text = (SAMPLES / file).read_text(encoding="utf-8")
    return text.splitlines()[int(line) - 1] if line else text


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_estimate_is_within_six_percent_of_cl100k(name: str) -> None:
    """On every stored sample (tool answers, prose, code) the estimate is within 6% of the exact
    cl100k count."""
    real = COUNTS[name]
    assert abs(estimate_tokens(_text(name)) - real) <= MAX_ERROR * real


def test_estimate_over_all_samples_is_within_three_percent() -> None:
    """Summed over all samples, the estimate is within 3% of the exact count."""
    real = sum(COUNTS.values())
    estimated = sum(estimate_tokens(_text(name)) for name in COUNTS)
    assert abs(estimated - real) <= 0.03 * real


def test_answers_trimmed_to_a_budget_fit_it_in_real_tokens() -> None:
    """The stored get_knowledge/find_provenance/search answers were made with token_budget 1500:
    counted exactly, each fits that budget."""
    for name, real in COUNTS.items():
        answer = json.loads(_text(name)) if name.startswith("answers.jsonl") else {}
        if "token_budget" in answer or "query" in answer or "spans" in answer:
            assert real <= 1500, name


def test_pre_tokenizer_pieces_rejoin_the_text() -> None:
    """The cl100k pre-tokenizer rewrite covers every character exactly once."""
    for name in COUNTS:
        text = _text(name)
        assert "".join(pieces(text)) == text


def test_estimate_edge_cases() -> None:
    """Empty text costs nothing; a long hex id or non-Latin text is never estimated as one token."""
    assert estimate_tokens("") == 0
    assert estimate_tokens("a" * 64) > 10
    assert estimate_tokens("0123456789abcdef" * 4) >= 20
    assert estimate_tokens("провенанс и свежесть") >= 8
