"""``make bench`` ends with where its figures stand against issue 9's targets: a figure meets its
target only if every value of it does, a figure not taken says so rather than passing, and a time
is also shown at the reference host speed (``bench/host_speed.py``)."""

from __future__ import annotations

import pytest

from tests.benchmodules import bench_module


def test_a_figure_meets_its_target_only_if_every_value_does(monkeypatch: pytest.MonkeyPatch) -> None:
    targets = bench_module("targets", monkeypatch)
    warm = targets.WARM_COMMIT
    assert targets.verdict(warm, [0.95, 0.99], None).endswith("0.95, 0.99 s (limit 1): met")
    assert targets.verdict(warm, [0.95, 1.13], None).endswith("0.95, 1.13 s (limit 1): NOT met")
    assert targets.verdict(warm, [], 1.2).endswith("not measured (limit 1 s)")


def test_times_are_shown_at_the_reference_speed_and_memory_is_not(monkeypatch: pytest.MonkeyPatch) -> None:
    targets = bench_module("targets", monkeypatch)
    line = targets.verdict(targets.FULL_INDEX, [15.0], 1.25)
    assert "15.00 s (limit 12): NOT met; ~12.00 s at the reference speed" in line
    memory = targets.verdict(targets.PEAK_MEMORY, [426.0], 1.25)
    assert memory.endswith("426 MiB (limit 500): met")


def test_the_report_lists_every_target_in_order_under_the_hours_speed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    targets = bench_module("targets", monkeypatch)
    lines = targets.report({targets.MCP_P50: [2.0, 6.3]}, 1.1)
    assert lines[0] == "issue 9's targets (host 1.10x the reference):"
    assert [line.split()[0:2] for line in lines[1:]] == [
        ["full", "index,"],
        ["full", "index,"],
        ["one-file", "commit,"],
        ["one-file", "commit,"],
        ["MCP", "p50"],
    ]
    assert "2.00, 6.30 ms (limit 20): met" in lines[-1]
    assert sum("not measured" in line for line in lines) == 4
    assert targets.report({}, None)[0] == "issue 9's targets (host speed not measured):"


def test_the_mcp_medians_are_read_from_the_latency_scripts_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    run = bench_module("run", monkeypatch)
    mcp = bench_module("mcp_latency", monkeypatch)
    said = [
        "first calls (wait for the store and the newest snapshot): 4.52 s; server RSS 480 MiB\n",
        mcp.figures("get_knowledge", [0.002, 0.0021, 0.0019]) + ", 3.1 units per answer\n",
        mcp.figures("find_provenance", [0.0063, 0.0061, 0.0065]) + "\n",
    ]
    found = [run.MCP_P50.match(line) for line in said]
    assert [(m[1], float(m[2])) for m in found if m is not None] == [
        ("get_knowledge", 2.0),
        ("find_provenance", 6.3),
    ]
