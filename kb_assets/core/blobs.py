"""The one parse of a blob: spans, gaps and every extractor's file-local facts together.

This is the unit of work that runs in parallel and is cached by blob id, so it takes and returns
only plain, picklable data.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping

from kb_assets.core.extractors.base import Extractor
from kb_assets.core.models import JSON, Gap, ParsedBlob
from kb_assets.core.spans import ParseLimits, parse_source


def analyze_blob(
    blob_id: str, data: bytes, extractors: tuple[Extractor, ...], limits: ParseLimits
) -> ParsedBlob:
    """Parse one blob and run every collector on it; a collector that fails becomes a gap."""
    parsed, gaps = parse_source(data, limits)
    line_count = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    if parsed is None:
        return ParsedBlob(blob_id=blob_id, spans=(), gaps=gaps, line_count=line_count)
    facts: dict[str, JSON] = {}
    extra: list[Gap] = []
    for ex in extractors:
        try:
            facts[ex.extractor_id] = ex.collect(parsed)
        except RecursionError:
            extra.append(Gap("", "too_deep", f"{ex.extractor_id}: nesting too deep to analyse", None, ex.extractor_id))
    return ParsedBlob(blob_id=blob_id, spans=parsed.spans, facts=facts, gaps=gaps + tuple(extra), line_count=line_count)


def encode_facts(facts: Mapping[str, JSON]) -> bytes:
    """Compact, deterministic bytes for the facts cache."""
    body = json.dumps(facts, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return zlib.compress(body.encode("utf-8"), 6)


def decode_facts(data: bytes) -> dict[str, JSON]:
    """Inverse of ``encode_facts``."""
    value: dict[str, JSON] = json.loads(zlib.decompress(data).decode("utf-8"))
    return value
