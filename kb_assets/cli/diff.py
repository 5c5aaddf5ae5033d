"""``kb diff BASE HEAD``: what knowledge changed between two indexed commits, with provenance.

The computation is ``kb_resources.store.knowledge_diff`` (shared with the MCP tool
``diff_knowledge``); this module only resolves the revisions and prints.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from kb_assets.cli.session import indexed_sha, open_session
from kb_resources.store.knowledge_diff import knowledge_diff

MARKS = (("added", "+"), ("removed", "-"), ("changed", "~"))


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Flags of ``kb diff``."""
    p.add_argument("base", metavar="BASE", help="the older indexed commit (any commit-ish)")
    p.add_argument("head", metavar="HEAD", help="the newer indexed commit (any commit-ish)")
    p.add_argument("--json", action="store_true", help="machine-readable output (a stable object)")


def run(args: argparse.Namespace) -> int:
    """Print the knowledge diff; exit 2 when either commit is not indexed."""
    session = open_session(args, read_only=True)
    base, head = indexed_sha(session, args.base), indexed_sha(session, args.head)
    with session.store.engine.connect() as conn:
        diff = knowledge_diff(conn, base, head).as_json()
    if args.json:
        print(json.dumps(diff, sort_keys=True, ensure_ascii=False))
        return 0
    for line in render(diff):
        print(line)
    return 0


def render(diff: dict[str, Any]) -> list[str]:
    """The human summary: totals, then one line per unit with its first provenance."""
    totals = diff["totals"]
    lines = [
        f"knowledge diff {diff['base'][:12]}..{diff['head'][:12]}: +{totals['added']} added, "
        f"-{totals['removed']} removed, ~{totals['changed']} changed, {totals['unchanged']} unchanged"
    ]
    for kind, changes in sorted(diff["kinds"].items()):
        lines.append(kind)
        for bucket, mark in MARKS:
            for unit in changes.get(bucket, []):
                shown = unit["after"] if bucket == "changed" else unit
                where = ", ".join(shown["provenance"][:2]) + (" …" if len(shown["provenance"]) > 2 else "")
                lines.append(f"  {mark} {shown['logical_key']}  ({where})")
    return lines
