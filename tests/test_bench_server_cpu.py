"""``bench/run.py`` counts the embedded server's CPU beside the measured command's: the server is
not the command's child, so ``os.wait4`` never sees it, and on two cores the two together bound
the wall time from below. What a backend spent is counted once, whether it is still alive at the
last look or was reaped by the postmaster before it."""

from __future__ import annotations

import time
from pathlib import Path

import psutil
import pytest
import sqlalchemy as sa

from kb_resources.store.embedded import EmbeddedServer, postmaster_pid
from tests.benchmodules import bench_module


def test_a_server_the_command_started_counts_from_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    tree_cpu = bench_module("tree_cpu", monkeypatch)
    assert tree_cpu.tree_seconds(None, (10, 2.0, {11: 0.5, 12: 1.0})) == pytest.approx(3.5)
    assert tree_cpu.tree_seconds((9, 4.0, {13: 1.0}), (10, 2.0, {11: 0.5})) == pytest.approx(2.5)
    assert tree_cpu.tree_seconds(None, None) == 0.0


def test_a_reaped_backend_counts_once_and_only_after_the_first_look(monkeypatch: pytest.MonkeyPatch) -> None:
    tree_cpu = bench_module("tree_cpu", monkeypatch)
    # Backend 11 had spent 0.5 s at the first look and 0.8 s in all when the postmaster reaped it
    # (its total grew by those 0.8 s); backend 12 grew from 1.0 to 1.25 s; 13 is new.
    first = (10, 2.0, {11: 0.5, 12: 1.0})
    last = (10, 2.0 + 0.1 + 0.8, {12: 1.25, 13: 0.2})
    assert tree_cpu.tree_seconds(first, last) == pytest.approx(0.1 + 0.3 + 0.25 + 0.2)


def test_a_figure_is_printed_only_for_the_embedded_store(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    run = bench_module("run", monkeypatch)
    assert run.embedded_pgdata({"KB_HOME": str(tmp_path)}) == tmp_path / "pg"
    assert run.embedded_pgdata({"KB_HOME": str(tmp_path), "KB_DB_URL": ""}) == tmp_path / "pg"
    assert run.embedded_pgdata({"KB_HOME": str(tmp_path), "KB_DB_URL": "postgresql://x/y"}) is None
    assert run.server_reading(None) is None  # another server: nothing of it to look at
    assert run.ServerCpu(None).stop() is None
    assert run.ServerCpu(tmp_path / "pg").stop() == 0.0  # no server there
    figures = run.Measured(1.0, 2.0, 3.0, 0, "", "", server_cpu=0.5)
    assert "2.00 s CPU + 0.50 s server CPU" in figures.line("x")
    assert "server" not in run.Measured(1.0, 2.0, 3.0, 0, "", "").line("x")


def test_the_cpu_of_a_backend_that_left_is_counted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A real server: a backend burns CPU on a query and disconnects, and the postmaster reaps
    it before the last look, so only the postmaster's count of its reaped children can hold it."""
    run = bench_module("run", monkeypatch)
    server = EmbeddedServer.start(tmp_path / "pg")
    try:
        sampler = run.ServerCpu(server.pgdata)
        engine = sa.create_engine(server.uri("postgres"), poolclass=sa.NullPool)
        with engine.connect() as conn:
            backend = psutil.Process(conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one())
            conn.exec_driver_sql("SELECT count(*) FROM generate_series(1, 3000000)").scalar_one()
            times = backend.cpu_times()
            spent = times.user + times.system
        engine.dispose()
        pid = postmaster_pid(server.pgdata)
        assert pid is not None
        postmaster = psutil.Process(pid)
        while backend.pid in {child.pid for child in postmaster.children()}:
            time.sleep(0.01)  # reaped: gone from the postmaster's children
        counted = sampler.stop()
    finally:
        server.release()
    assert spent > 0.05
    assert counted is not None
    # Both sides add up clock ticks as floats, in different orders: equal times can differ in
    # their last bit (CI once read 0.24 against 0.24000000000000002).
    assert counted >= spent - 1e-9
