"""Is a unit still true? Measured against the newest indexed commit of the branch.

Artifact ids are content addresses of a unit's grounding spans and content, so "its grounding is
unchanged at the newest indexed commit" is exactly "its artifact id is in the newest snapshot".
A unit that is not there is ``stale``, and ``last_true_at`` is the newest commit of the branch
whose snapshot still holds the same id (or the commit the unit was read at, when no commit of the
branch holds it, e.g. a unit read at a commit of another branch). Two index probes per answer.
"""

from __future__ import annotations

from collections.abc import Iterable

import sqlalchemy as sa

from kb_mcp.branch import BranchView
from kb_mcp.models import Freshness
from kb_resources.store import reads


def freshness_of(
    conn: sa.Connection, view: BranchView, units: Iterable[tuple[str, str]]
) -> dict[str, Freshness]:
    """Freshness of each (artifact_id, sha it was read at), keyed by artifact id."""
    read_at = dict(units)
    newest = view.newest
    if newest is None:  # nothing published: nothing to compare with (cannot hold units either)
        return {aid: Freshness(status="stale", as_of=None, last_true_at=sha) for aid, sha in read_at.items()}
    current = reads.present_in(conn, newest, read_at)
    stale = [aid for aid in read_at if aid not in current]
    held = reads.snapshots_holding(conn, stale, view.chain) if stale else {}
    order = {sha: i for i, sha in enumerate(view.chain)}
    out = {aid: Freshness(status="current", as_of=newest, last_true_at=newest) for aid in current}
    for aid in stale:
        holders = sorted(held.get(aid, ()), key=order.__getitem__)
        out[aid] = Freshness(
            status="stale", as_of=newest, last_true_at=holders[0] if holders else read_at[aid]
        )
    return out
