"""``bench/tree_cpu.py`` counts what a process that stays up (a ``kb watch``) and its forked
children spend between two looks: a child's CPU counts whether it is still alive at the second
look or its parent reaped it before, and only once when a look falls in the middle of its life."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import psutil
import pytest

from tests.benchmodules import bench_module

PARENT = textwrap.dedent(
    """
    import os, sys, time
    sys.stdin.readline()
    child = os.fork()
    if child == 0:
        end = time.process_time() + 0.3
        while time.process_time() < end:
            pass
        times = os.times()
        print("burned", times.user + times.system, flush=True)
        sys.stdin.readline()  # the parent waits in waitpid: this line is the child's
        os._exit(0)
    os.waitpid(child, 0)
    print("reaped", flush=True)
    sys.stdin.readline()
    """
)
"""A parent that, told to, forks a child that burns 0.3 s of CPU, reports it and waits to be
told to leave; the parent reaps it and waits to be told to leave too."""


def _own(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


def test_a_child_is_counted_once_alive_or_reaped(monkeypatch: pytest.MonkeyPatch) -> None:
    tree_cpu = bench_module("tree_cpu", monkeypatch)
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert parent.stdin is not None
    assert parent.stdout is not None
    try:
        first = tree_cpu.tree_reading(parent.pid)
        own_first = _own(parent.pid)
        parent.stdin.write("go\n")
        parent.stdin.flush()
        word, burned = parent.stdout.readline().split()
        assert word == "burned"
        middle = tree_cpu.tree_reading(parent.pid)  # the child is alive: counted by its own time
        assert middle is not None
        assert len(middle[2]) == 1
        parent.stdin.write("leave\n")
        parent.stdin.flush()
        assert parent.stdout.readline().strip() == "reaped"
        last = tree_cpu.tree_reading(parent.pid)  # reaped: counted in the parent's total
        own_last = _own(parent.pid)
        assert last is not None
        assert last[2] == {}
    finally:
        parent.communicate("quit\n", timeout=30)
    whole = tree_cpu.tree_seconds(first, last)
    in_two = tree_cpu.tree_seconds(first, middle) + tree_cpu.tree_seconds(middle, last)
    assert in_two == pytest.approx(whole, abs=1e-9)
    # What the child burned, in clock ticks of 0.01 s: within two ticks of what the looks saw.
    assert whole - (own_last - own_first) == pytest.approx(float(burned), abs=0.02)
    assert tree_cpu.tree_seconds(first, middle) >= float(burned) - 0.02


def test_a_process_that_is_gone_reads_as_none(monkeypatch: pytest.MonkeyPatch) -> None:
    tree_cpu = bench_module("tree_cpu", monkeypatch)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    assert tree_cpu.tree_reading(gone.pid) is None


def test_the_warm_commits_cpu_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """``make bench`` prints the medians under the warm commits' seconds; no line when the CPU
    was not taken, no server figure for another server than the embedded one."""
    run = bench_module("run", monkeypatch)
    seconds, rss = (1.0, 1.2, 1.1), (400.0, 401.0, 402.0)
    figures = run.WatchFigures(seconds, rss, (0.8, 0.9, 0.7), (0.3, 0.5, 0.4), (2.0, 2.2, 2.1))
    assert figures.cpu_line() == (
        "CPU a warm commit (median): 0.80 s kb watch and its children + 0.40 s server CPU until published;"
        " 2.10 s kb watch until idle again"
    )
    other = run.WatchFigures((1.0,), (400.0,), (0.8,), None, (2.0,))
    assert "server" not in other.cpu_line()
    assert run.WatchFigures((1.0,), (400.0,)).cpu_line() == ""
