"""Build a ``Program`` straight from source text, with no git and no database.

Extractor tests use this to exercise ``collect`` + ``resolve`` exactly as the pipeline does (same
blob analysis, same module map), in milliseconds; end-to-end tests then cover the wiring.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from kb_assets.core.blobs import analyze_blob, decode_facts, encode_facts
from kb_assets.core.extractors.base import Collector, Extractor
from kb_assets.core.extractors.registry import COLLECTORS, EXTRACTORS
from kb_assets.core.modules import map_modules
from kb_assets.core.program import Program, SourceFile
from kb_assets.core.spans import ParseLimits


def blob_id(data: bytes) -> str:
    """git's blob id of ``data`` (so ids look exactly like the real ones)."""
    return hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()


def program_from_files(
    files: Mapping[str, str | bytes],
    *,
    extractors: Sequence[Extractor] = EXTRACTORS,
    collectors: Sequence[Collector] = COLLECTORS,
    sha: str = "0" * 40,
) -> Program:
    """Parse every file, run the collectors, round-trip facts through the cache encoding, and
    assemble the commit-wide view the resolvers see."""
    module_map = map_modules(files)
    sources: dict[str, SourceFile] = {}
    for path in sorted(files):
        raw = files[path]
        data = raw.encode("utf-8") if isinstance(raw, str) else raw
        parsed = analyze_blob(blob_id(data), data, tuple(extractors), ParseLimits(), tuple(collectors))
        if not parsed.spans:
            continue
        sources[path] = SourceFile(
            path=path,
            blob_id=parsed.blob_id,
            module=module_map.modules.get(path),
            is_package=path.endswith("__init__.py"),
            spans=parsed.spans,
            facts=decode_facts(encode_facts(parsed.facts)),
        )
    return Program(sha=sha, files=sources, module_map=module_map)
