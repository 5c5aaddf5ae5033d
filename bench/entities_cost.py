"""CPU cost of the ``entities`` extractor on one repository's HEAD (issue 9's index budget).

Builds the commit's ``Program`` the way ``kb index`` does (every registered extractor's and
collector's per-blob facts), then times, in process CPU seconds (best of ``--repeat``):

* ``collect``: the entities extractor's own per-blob ``collect`` over every parsed file (parsing
  itself is shared by all extractors and not counted);
* ``symbol table``: building the commit's symbol table, which every resolver shares (shown for
  scale, not charged to entities);
* ``resolve``: ``EntitiesExtractor.resolve`` on a freshly built table (its lookup memo empty, so
  every name entities asks for is resolved here: what entities adds to an index);
  ``resolve cold`` includes building the table.

Prints figures; asserts nothing. Usage: ``python bench/entities_cost.py REPO [--repeat N]``
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's kb_assets, not the one installed in the venv

from kb_assets.core.blobs import analyze_blob, decode_facts, encode_facts  # noqa: E402
from kb_assets.core.extractors.entities import EntitiesExtractor  # noqa: E402
from kb_assets.core.extractors.registry import COLLECTORS, EXTRACTORS  # noqa: E402
from kb_assets.core.modules import map_modules  # noqa: E402
from kb_assets.core.program import Program, SourceFile  # noqa: E402
from kb_assets.core.spans import ParsedSource, ParseLimits, parse_source  # noqa: E402
from kb_assets.core.symbols import table as symbols_table  # noqa: E402


def head_files(repo: Path) -> dict[str, bytes]:
    """Every tracked ``.py`` file of the checkout."""
    listed = subprocess.run(["git", "ls-files", "*.py"], cwd=repo, capture_output=True, text=True, check=True)
    return {path: (repo / path).read_bytes() for path in listed.stdout.split()}


def build_program(files: dict[str, bytes]) -> tuple[Program, list[ParsedSource]]:
    """The commit's program (facts round-tripped through the cache encoding) and the parsed files."""
    module_map = map_modules(files)
    sources: dict[str, SourceFile] = {}
    parsed: list[ParsedSource] = []
    for path in sorted(files):
        data = files[path]
        blob = hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()  # git's blob id
        result = analyze_blob(blob, data, EXTRACTORS, ParseLimits(), COLLECTORS)
        if not result.spans:
            continue
        source, _ = parse_source(data)
        if source is not None:
            parsed.append(source)
        sources[path] = SourceFile(
            path, blob, module_map.modules.get(path), path.endswith("__init__.py"), result.spans,
            decode_facts(encode_facts(result.facts)),
        )  # fmt: skip
    return Program("0" * 40, sources, module_map), parsed


def cpu(action: Callable[[], object], repeat: int, before: Callable[[], object] | None = None) -> float:
    """Best process CPU time of ``repeat`` calls of ``action`` (``before`` runs untimed first)."""
    best = float("inf")
    for _ in range(repeat):
        if before is not None:
            before()
        start = time.process_time()
        action()
        best = min(best, time.process_time() - start)
    return best


def main() -> None:
    """Parse arguments, build the program, print the timings."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    files = head_files(args.repo)
    program, parsed = build_program(files)
    extractor = EntitiesExtractor()

    def collect_all() -> None:
        for source in parsed:
            extractor.collect(source)

    def fresh_table() -> None:
        symbols_table._tables.forget()  # drop the memoized table
        symbols_table.symbol_table(program)

    def resolve_cold() -> None:
        symbols_table._tables.forget()
        extractor.resolve(program)

    collect_s = cpu(collect_all, args.repeat)
    table_s = cpu(fresh_table, args.repeat)
    resolve_s = cpu(lambda: extractor.resolve(program), args.repeat, before=fresh_table)
    cold_s = cpu(resolve_cold, args.repeat)
    extraction = extractor.resolve(program)
    print(
        f"{args.repo.name}: {len(files)} files ({len(parsed)} parsed), "
        f"{len(extraction.drafts)} entities, {len(extraction.gaps)} gaps"
    )
    print(f"collect (entities facts, all files): {collect_s:.3f} s CPU")
    print(f"symbol table (shared by every resolver): {table_s:.3f} s CPU")
    print(f"resolve (table built): {resolve_s:.3f} s CPU; resolve cold: {cold_s:.3f} s CPU")
    print(f"entities total (collect + resolve): {collect_s + resolve_s:.3f} s CPU")


if __name__ == "__main__":
    main()
