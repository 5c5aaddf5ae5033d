"""What ``diff_knowledge`` answers: the knowledge diff of two indexed commits (``kb diff --json``).

The diff itself is ``kb_resources.store.knowledge_diff`` (shared with the CLI); this tool adds
each unit's freshness and summary and trims the unit lists to the token budget, changed units
first, then added, then removed, reporting what was left out per kind.
"""

from __future__ import annotations

from typing import Any

from kb_mcp.budget import compact_json, estimate_tokens
from kb_mcp.context import ServeContext
from kb_mcp.freshness import freshness_of
from kb_mcp.models import DiffAnswer, Omitted
from kb_mcp.summaries import summarize
from kb_resources.store.knowledge_diff import knowledge_diff

SECTIONS = ("changed", "added", "removed")


def _unit(record: dict[str, Any], fresh: dict[str, Any]) -> dict[str, Any]:
    """A diff unit: the record plus its freshness and summary."""
    summary = summarize(record["kind"], record["logical_key"], record["payload"])
    return {**record, "summary": summary, "freshness": fresh[record["artifact_id"]]}


def _trim(kinds: dict[str, dict[str, list[Any]]], budget: int) -> tuple[int, dict[str, int]]:
    """Drop list items (changed, then added, then removed order of keeping) beyond ``budget``."""
    remaining, dropped = budget, dict[str, int]()
    for section in SECTIONS:
        for kind in sorted(kinds):
            kept = []
            for item in kinds[kind][section]:
                cost = estimate_tokens(compact_json(item)) + 1
                if cost <= remaining:
                    kept.append(item)
                    remaining -= cost
                else:
                    dropped[kind] = dropped.get(kind, 0) + 1
            kinds[kind][section] = kept
    return budget - remaining, dropped


def diff_answer(serve: ServeContext, base: str, head: str, budget: int) -> DiffAnswer:
    """The diff of the snapshots of ``base`` and ``head``, unit lists trimmed to ``budget`` tokens."""
    with serve.reading(base) as (conn, base_sha, view):
        head_sha, _ = serve.branch.resolve(conn, head)
        diff = knowledge_diff(conn, base_sha, head_sha).as_json()
        shown = [(u, base_sha) for k in diff["kinds"].values() for u in k["removed"]]
        shown += [(u, head_sha) for k in diff["kinds"].values() for u in k["added"]]
        shown += [
            (p[side], sha)
            for k in diff["kinds"].values()
            for p in k["changed"]
            for side, sha in (("before", base_sha), ("after", head_sha))
        ]
        fresh = freshness_of(conn, view, [(u["artifact_id"], sha) for u, sha in shown])
    fresh_json = {aid: f.model_dump(mode="json") for aid, f in fresh.items()}
    kinds: dict[str, dict[str, list[Any]]] = {
        kind: {
            "added": [_unit(u, fresh_json) for u in part["added"]],
            "removed": [_unit(u, fresh_json) for u in part["removed"]],
            "changed": [{s: _unit(p[s], fresh_json) for s in ("before", "after")} for p in part["changed"]],
        }
        for kind, part in diff["kinds"].items()
    }
    envelope = {"base": base_sha, "head": head_sha, "kinds": {}, "totals": diff["totals"], "omitted": {}}
    _, dropped = _trim(kinds, budget - estimate_tokens(compact_json(envelope)) - 60)
    omitted = Omitted(
        total=sum(dropped.values()),
        by_kind=dict(sorted(dropped.items())),
        hint="raise token_budget, or run `kb diff --json` for the whole diff" if dropped else None,
    )
    answer = DiffAnswer.model_validate(
        {"base": base_sha, "head": head_sha, "kinds": kinds, "totals": diff["totals"], "omitted": omitted}
    )
    return answer
