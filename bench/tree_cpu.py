"""The CPU a process and its children have spent between two looks, for processes the benchmark
does not wait for: the embedded PostgreSQL server (shared by every ``kb`` process of a store, so
``os.wait4`` of a command never sees it) and a ``kb watch`` that stays up across the commits it
indexes (its forked copies and its frame checks' process included).

A look (``TreeReading``) takes the process's own time with that of the children it has reaped,
and each live child's own time. A child that is reaped between two looks is counted by its
parent's total, for its whole life, so what it had spent by the first look is taken off
(``tree_seconds``); a child's own children count only once it reaps them. A child reaped while a
look reads the tree is counted twice in that look rather than missed: a race of microseconds
against a figure of tenths of a second.
"""

from __future__ import annotations

import contextlib

import psutil

TreeReading = tuple[int, float, dict[int, float]]
"""One look at a process: its pid, its CPU seconds with those of the children it has reaped, and
each live child's own CPU seconds."""


def tree_reading(pid: int) -> TreeReading | None:
    """Process ``pid`` and its live children as they are now; None when it is gone."""
    try:
        parent = psutil.Process(pid)
        children = {}
        for child in parent.children():
            with contextlib.suppress(psutil.Error):
                times = child.cpu_times()
                children[child.pid] = times.user + times.system
        own = parent.cpu_times()  # after the children: one reaped in between counts twice, not never
    except psutil.Error:
        return None
    return pid, own.user + own.system + own.children_user + own.children_system, children


def tree_seconds(first: TreeReading | None, last: TreeReading | None) -> float:
    """CPU seconds between two looks. A child reaped in between is counted by the parent's total
    (its whole life: what it had spent by ``first`` is taken off); one still alive by its own
    time. A parent that was not there at ``first`` (the command started the server) or is
    another one counts from zero."""
    if last is None:
        return 0.0
    pid, total, alive = last
    if first is None or first[0] != pid:
        first = (pid, 0.0, {})
    _, total_before, alive_before = first
    reaped_before = sum(t for child, t in alive_before.items() if child not in alive)
    grown = sum(t - alive_before.get(child, 0.0) for child, t in alive.items())
    return total - total_before - reaped_before + grown
