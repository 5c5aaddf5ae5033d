"""``bench/host_speed.py`` measures the host, not knowbase: its workload computes the same thing on
every run (so a faster round means a faster host, never less work), and its line reports the
median round against the recorded reference."""

from __future__ import annotations

import pytest

from tests.benchmodules import bench_module


def test_the_workload_computes_the_recorded_digest_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """A changed workload must come with a new digest and a new reference (``DIGEST``)."""
    host = bench_module("host_speed", monkeypatch)
    assert host.workload() == host.DIGEST
    assert host.workload() == host.DIGEST


def test_the_line_gives_the_median_round_and_its_ratio_to_the_reference(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    host = bench_module("host_speed", monkeypatch)
    monkeypatch.setattr(host, "REFERENCE_SECONDS", 0.2)
    speed = host.HostSpeed((0.5, 0.3, 0.4))
    assert speed.median == pytest.approx(0.4)
    assert speed.ratio == pytest.approx(2.0)
    assert speed.line("host speed") == (
        "host speed                            0.400 s a round (median of 3, 0.300-0.500): "
        "2.00x the reference's 0.200 s"
    )


def test_measure_times_each_round_after_an_untimed_one(monkeypatch: pytest.MonkeyPatch) -> None:
    host = bench_module("host_speed", monkeypatch)
    calls: list[str] = []

    def counted() -> str:
        calls.append(host.DIGEST)
        return str(host.DIGEST)

    monkeypatch.setattr(host, "workload", counted)
    speed = host.measure(3)
    assert len(calls) == 4
    assert len(speed.rounds) == 3
    assert all(r >= 0 for r in speed.rounds)
