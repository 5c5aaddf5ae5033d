"""Process-level settings of the ``kb`` console script: a batch process, not a library.

Two costs that have nothing to do with knowbase's work dominated a large index run (Django,
measured with ``gc.callbacks`` and timestamps around exit): the cyclic garbage collector
re-traversing a large acyclic heap (see ``kb_assets.core.collector``), and the interpreter's
teardown freeing that heap object by object after the work was done and the store released:
~10 s between the last line printed and the process exiting. Two more are memory: glibc gives
each thread that allocates its own malloc arena, whose freed memory no other thread reuses, and
a library imports an optional dependency the process never uses.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import sys
import threading
from typing import NoReturn

M_ARENA_MAX = -8
"""glibc's ``mallopt`` parameter for the number of malloc arenas (``malloc.h``)."""


def one_malloc_arena() -> None:
    """Make every thread allocate from one malloc arena (glibc; elsewhere nothing happens).

    The checks of a step run in threads beside each other (``kb_gates.checks.concluded``), and
    Dagster runs threads of its own: each got an arena, and the memory its reads freed stayed in
    it. On Django's full index one arena lowered the run's peak by ~9 MiB (516 -> 507 MiB); the
    threads mostly wait on the database, so they hardly contend for the arena's lock. Called
    first thing, before any thread exists."""
    if not sys.platform.startswith("linux"):
        return
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc's C library
        return
    mallopt(M_ARENA_MAX, 1)


NEVER_IMPORTED = ("hypothesis",)
"""Optional dependencies of knowbase's libraries that a ``kb`` process never uses: pandera imports
hypothesis, when it is installed, the first time it validates a frame, for data synthesis
(``strategy``, ``example``) that knowbase never asks for: ~9 MiB and ~75 ms of every index run.
Only the dev tools install it (the test suite uses it), so without this a run in a development
environment carried a cost that a plain install does not. Since the frame checks validate in a
helper process (``kb_gates.check_process``), that process is the one pandera runs in: it blocks
the same names as the process that starts it."""


def skip_unused_imports() -> None:
    """Make an import of a ``NEVER_IMPORTED`` module fail as if it were not installed (a ``None``
    entry in ``sys.modules``), unless something imported it already."""
    for name in NEVER_IMPORTED:
        if name not in sys.modules:
            sys.modules[name] = None  # type: ignore[assignment]  # import raises ModuleNotFoundError


def exit_now(code: int) -> NoReturn:
    """Exit with ``code`` after the exit handlers ran and the output is flushed, without the
    interpreter freeing every object first (only when no other thread could still be working)."""
    if threading.active_count() > 1:
        sys.exit(code)
    atexit._run_exitfuncs()  # releases the store (stops an embedded server nobody else uses)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
