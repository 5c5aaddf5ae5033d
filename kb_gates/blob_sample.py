"""The comparison behind ``blob_cache_reproduces``: blobs parsed again from scratch against what
the parse cache holds for them; plain data in, one line per blob that differs out, apart from the
store and git reads (``history.cache_mismatches``) so that it is tested on its own.
"""

from __future__ import annotations

from collections.abc import Sequence

from kb_assets.core.blobs import analyze_blob, canonical_facts, decode_facts
from kb_assets.core.extractors.registry import COLLECTORS, EXTRACTORS
from kb_assets.core.models import Span
from kb_assets.core.spans import ParseLimits

Sampled = tuple[str, bytes, tuple[tuple[Span, ...], bytes] | None]
"""(blob id, its bytes from git, what the cache holds for it: spans and encoded facts, or None)."""


def blob_mismatches(sampled: Sequence[Sampled], limits: ParseLimits) -> list[str]:
    """Each blob whose cached spans or facts differ from a fresh parse, as one line (in order)."""
    bad = []
    for blob_id, data, cached in sampled:
        if cached is None:
            bad.append(f"{blob_id[:12]}: not in the cache")
            continue
        spans, facts = cached
        fresh = analyze_blob(blob_id, data, EXTRACTORS, limits, collectors=COLLECTORS)
        if spans != fresh.spans:
            bad.append(f"{blob_id[:12]}: cached spans differ from a fresh parse")
        elif spans and decode_facts(facts) != canonical_facts(fresh.facts):
            bad.append(f"{blob_id[:12]}: cached facts differ from a fresh parse")
    return bad
