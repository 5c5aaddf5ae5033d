"""``kb watch`` reads the store only when a watched branch moved, and retries a failed round later."""

from __future__ import annotations

from kb_assets.indexing.watch_gate import WatchGate

TIPS = {"main": "a" * 40, "dev": "b" * 40}


def test_a_round_is_due_at_first_and_when_a_tip_moves() -> None:
    """The first look always runs a round; unchanged tips do not; a moved, new or deleted branch does."""
    gate = WatchGate()
    assert gate.due(TIPS, now=0.0)
    gate.ran(TIPS, failed=False, now=0.0)
    assert not gate.due(dict(TIPS), now=1000.0)
    assert gate.due({**TIPS, "main": "c" * 40}, now=1.0)
    assert gate.due({**TIPS, "dev": None}, now=1.0)


def test_a_failed_round_is_retried_after_the_retry_time_only() -> None:
    """A round that failed with unchanged tips runs again once ``retry_s`` has passed, not before;
    a success clears the retry."""
    gate = WatchGate(retry_s=10.0)
    gate.ran(TIPS, failed=True, now=5.0)
    assert not gate.due(TIPS, now=14.9)
    assert gate.due(TIPS, now=15.0)
    gate.ran(TIPS, failed=False, now=15.0)
    assert not gate.due(TIPS, now=100.0)
