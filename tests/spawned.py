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
