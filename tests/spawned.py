"""Running a test's function in a freshly spawned process.

A forked copy (``kb_assets.core.forked``) is only made from a process with one thread, and the
test process may hold threads of earlier tests (Dagster's, the MCP client's); a spawned process
starts with one.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from typing import Any


def run_spawned(function: Callable[..., Any], *args: Any) -> Any:
    """``function(*args)`` in a new process (both must pickle: a module-level function)."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(function, args)


def counting_forks() -> list[bool]:
    """From now on in this (spawned) process, each ``forked.fork`` call appends to the returned
    list whether a copy was made."""
    from kb_assets.core import forked

    made: list[bool] = []
    real = forked.fork

    def counted(work: Any) -> Any:
        helper = real(work)
        made.append(helper is not None)
        return helper

    forked.fork = counted
    return made
