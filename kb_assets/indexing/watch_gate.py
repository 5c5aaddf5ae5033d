"""When ``kb watch`` looks at the store again: only when a watched branch moved (or to retry).

Reading the watched branches' tips costs microseconds; a round (published commits and cursors from
the store, a plan per branch) costs a few queries whose size grows with the history. So the tips
are read every ``--interval`` (``watch.INTERVAL_S``, 0.25 s by default: a new commit waits
0.125 s on average before its run starts, where a 10 s poll made it wait 5 s) and a round runs
only when they differ from those of the last round, or when the last round failed and
``retry_s`` has passed (a failing run is not started back to back).
"""

from __future__ import annotations

from collections.abc import Mapping

RETRY_S = 10.0
"""Seconds before a round that failed to publish a commit is tried again with unchanged tips."""


class WatchGate:
    """Decides, from the branch tips and a monotonic clock reading, whether a round is due."""

    def __init__(self, retry_s: float = RETRY_S) -> None:
        self.retry_s = retry_s
        self._tips: dict[str, str | None] | None = None
        self._retry_at: float | None = None

    def due(self, tips: Mapping[str, str | None], now: float) -> bool:
        """Whether to run a round now: first look, moved tips, or a failed round's retry time."""
        if self._tips is None or dict(tips) != self._tips:
            return True
        return self._retry_at is not None and now >= self._retry_at

    def ran(self, tips: Mapping[str, str | None], *, failed: bool, now: float) -> None:
        """Record a round run at ``now`` over ``tips`` (read before it started)."""
        self._tips = dict(tips)
        self._retry_at = now + self.retry_s if failed else None
