"""Process-level settings of the ``kb`` console script: a batch process, not a library.

Two costs that have nothing to do with knowbase's work dominated a large index run (Django,
measured with ``gc.callbacks`` and timestamps around exit): the cyclic garbage collector
re-traversing a large acyclic heap (see ``kb_assets.core.collector``), and the interpreter's
teardown freeing that heap object by object after the work was done and the store released:
~10 s between the last line printed and the process exiting.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn


def exit_now(code: int) -> NoReturn:
    """Exit with ``code`` after the exit handlers ran and the output is flushed, without the
    interpreter freeing every object first (only when no other thread could still be working)."""
    if threading.active_count() > 1:
        sys.exit(code)
    atexit._run_exitfuncs()  # releases the store (stops an embedded server nobody else uses)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
