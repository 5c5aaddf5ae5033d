"""Where ``make bench``'s figures stand against issue 9's targets, printed after them.

Each target is a limit on one figure; a figure taken several times (the warm watch's commits, the
two MCP tools) meets its target only if every value does. A figure the run did not take (a step
skipped or failed) says so instead of passing. Beside each wall-clock figure stands a rough
estimate of it at the reference host speed (``host_speed``: the figure divided by the hour's
ratio, the mean of the ratios before and after), which is what to compare with another session's:
rough, because the workload uses one core and an index run two cores and the server.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Target:
    """One figure's limit: its label, the limit, its unit, and whether it is a time (seconds
    scale with the host's speed; memory does not)."""

    label: str
    limit: float
    unit: str
    timed: bool = True


FULL_INDEX = Target("full index, wall", 12.0, "s")
PEAK_MEMORY = Target("full index, peak memory (largest process)", 500.0, "MiB", timed=False)
WARM_COMMIT = Target("one-file commit, warm kb watch", 1.0, "s")
COLD_COMMIT = Target("one-file commit, cold kb index", 1.0, "s")
"""The same limit for a new ``kb index`` process: the issue asks for the one-file commit in 1 s
"end to end including the Dagster run"; the watch is how a team follows a branch, a cold
process also imports Dagster and loads the program."""
MCP_P50 = Target("MCP p50 (get_knowledge, find_provenance)", 20.0, "ms")

TARGETS = (FULL_INDEX, PEAK_MEMORY, WARM_COMMIT, COLD_COMMIT, MCP_P50)


def verdict(target: Target, values: Sequence[float], ratio: float | None) -> str:
    """One line: the figure(s), whether every value is within the limit, and for a time, the
    figure at the reference host speed when the hour's ``ratio`` is known."""
    if not values:
        return f"  {target.label:<42} not measured (limit {target.limit:g} {target.unit})"
    shown = ", ".join(_number(v) for v in values)
    met = "met" if all(v <= target.limit for v in values) else "NOT met"
    line = f"  {target.label:<42} {shown} {target.unit} (limit {target.limit:g}): {met}"
    if target.timed and ratio is not None and ratio > 0:
        line += f"; ~{', '.join(_number(v / ratio) for v in values)} {target.unit} at the reference speed"
    return line


def report(figures: Mapping[Target, Sequence[float]], ratio: float | None) -> list[str]:
    """The targets block: a heading naming the hour's speed, then one ``verdict`` per target."""
    speed = "host speed not measured" if ratio is None else f"host {ratio:.2f}x the reference"
    return [f"issue 9's targets ({speed}):"] + [
        verdict(target, figures.get(target, ()), ratio) for target in TARGETS
    ]


def _number(value: float) -> str:
    return f"{value:.0f}" if value >= 100 else f"{value:.2f}"
