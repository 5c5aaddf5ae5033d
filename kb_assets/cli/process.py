"""Process-level settings of the ``kb`` console script: a batch process, not a library.

Two costs that have nothing to do with knowbase's work dominated a large index run (Django,
measured with ``gc.callbacks`` and timestamps around exit):

* the cyclic garbage collector traversed the whole heap again and again while the program, the
  symbol tables and the call graph grew (16 full collections, 13 of 30 CPU seconds), although those
  structures are long-lived and acyclic and the run leaves almost no cyclic garbage;
* the interpreter's teardown freed that heap object by object after the work was done and the
  store released: ~10 s between the last line printed and the process exiting.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
import threading
from typing import NoReturn

COLLECTOR_THRESHOLDS = (200_000, 20, 10)
"""Young-generation collections every 200k net allocations instead of 700; older generations
still run (every 4M and 40M allocations), so a long ``kb watch`` keeps reclaiming cycles."""


def tune_collector() -> None:
    """Collect cyclic garbage rarely: the heap of an index run is large, long-lived and acyclic."""
    gc.set_threshold(*COLLECTOR_THRESHOLDS)


def exit_now(code: int) -> NoReturn:
    """Exit with ``code`` after the exit handlers ran and the output is flushed, without the
    interpreter freeing every object first (only when no other thread could still be working)."""
    if threading.active_count() > 1:
        sys.exit(code)
    atexit._run_exitfuncs()  # releases the store (stops an embedded server nobody else uses)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
