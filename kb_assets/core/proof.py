"""Whether the staged knowledge of a commit is what its blocking checks passed on.

A blocking check stops the rest of its own run, not a later run: materializing
``knowledge_snapshot`` alone (from the UI, say) after a run whose blocking check failed would
publish that run's staged sets unchecked. The snapshot step therefore asks, before publishing,
for each blocking check of the assets upstream of it: did its newest evaluation at this commit
pass, on a materialization whose data version (the digest of what the asset staged) is the
asset's current one? Comparing data versions rather than materialization ids lets two runs of
one commit that staged the same sets vouch for each other. The checks against a base
(``kb_resources.store.staged_delta``) rely on this: what is published passed them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CheckEvidence:
    """The newest evaluation of one blocking check at a commit (``passed`` is None: never evaluated)."""

    asset: str
    check: str
    passed: bool | None
    checked_version: str | None
    """The data version of the materialization the evaluation looked at."""


def unproven(evidence: Iterable[CheckEvidence], current: Mapping[str, str | None]) -> list[str]:
    """``asset.check (why)`` for each blocking check that does not vouch for ``current``, the
    data version of each asset's newest materialization at the commit (None: never materialized)."""
    found = []
    for item in sorted(evidence, key=lambda e: (e.asset, e.check)):
        name = f"{item.asset}.{item.check}"
        version = current.get(item.asset)
        if version is None:
            found.append(f"{name} ({item.asset} was never materialized at this commit)")
        elif item.passed is None:
            found.append(f"{name} (never evaluated at this commit)")
        elif not item.passed:
            found.append(f"{name} (failed)")
        elif item.checked_version != version:
            found.append(f"{name} (passed on other staged data than the current)")
    return found
