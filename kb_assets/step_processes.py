"""What every step process of the multiprocess index job starts from (``kb index --processes N``).

The job's executor starts its step processes from a fork server that has imported this module
once (``FORKSERVER``): each step process then begins with Dagster, the Definitions and every
knowbase module already imported, instead of a fresh interpreter importing them again (~2-3 s a
step with the ``spawn`` default, nineteen steps on Django), and with knowbase's collector
thresholds, its one malloc arena and its skipped imports (``kb_assets.cli.process``), which a
step process started by Dagster's own entry point would not set: a step that builds a program's
call graph is the heap ``kb_assets.core.collector`` was tuned for.
"""

from __future__ import annotations

from kb_assets.cli.process import one_malloc_arena, skip_unused_imports

skip_unused_imports()  # first: the frame checks' helper process inherits what it blocks

import kb_assets.definitions  # noqa: E402, F401 - preloaded for the step processes (module docstring)
from kb_assets.core.collector import tune_collector  # noqa: E402

one_malloc_arena()
tune_collector()
