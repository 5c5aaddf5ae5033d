"""Keyword ranking over a snapshot's keys and summaries: the fallback while embeddings are absent.

Terms are lower-cased word pieces of the logical key and summary (``getQuerySet`` and
``get_queryset`` both give ``get``, ``query``, ``set``...); a unit scores the idf-weighted sum of
the query terms it contains. The inverted index is built once per snapshot, on first use.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass

from kb_mcp.snapshots import Entry, SnapshotIndex

_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
MAX_QUERY_TERMS = 32


def terms_of(text: str) -> set[str]:
    """The lower-cased word pieces of ``text`` (camelCase and snake_case split; 1-letter dropped)."""
    return {w.lower() for w in _WORDS.findall(text) if len(w) > 1}


@dataclass(frozen=True)
class TermIndex:
    """Term -> positions of the snapshot entries that contain it."""

    postings: dict[str, list[int]]
    size: int

    def search(self, query: str) -> list[tuple[int, float]]:
        """(entry position, score) of every entry sharing a term with ``query``, best first."""
        scores: dict[int, float] = defaultdict(float)
        for term in sorted(terms_of(query))[:MAX_QUERY_TERMS]:
            hits = self.postings.get(term, [])
            if not hits:
                continue
            idf = math.log(1 + self.size / len(hits))
            for pos in hits:
                scores[pos] += idf
        return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def term_index(index: SnapshotIndex) -> TermIndex:
    """The term index of a snapshot (built on first use, then kept with the snapshot's index)."""
    cached = index.memo.get("terms")
    if isinstance(cached, TermIndex):
        return cached
    postings: dict[str, list[int]] = defaultdict(list)
    for pos, entry in enumerate(index.entries):
        for term in terms_of(f"{entry.logical_key} {entry.summary}"):
            postings[term].append(pos)
    built = TermIndex(dict(postings), len(index.entries))
    index.memo["terms"] = built
    return built


def lexical_ranking(index: SnapshotIndex, query: str, k: int) -> list[Entry]:
    """The ``k`` entries that best match ``query`` by keywords."""
    return [index.entries[pos] for pos, _ in term_index(index).search(query)[:k]]
