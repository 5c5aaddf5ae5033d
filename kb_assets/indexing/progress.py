"""Progress reporting for long steps, pluggable so the CLI can draw it and Dagster can log it.

The reporter is process-wide on purpose: asset bodies run in the CLI's own process under
``execute_in_process``, and threading a callback through Dagster's config would make it part of
the run's identity.
"""

from __future__ import annotations

from collections.abc import Callable

Reporter = Callable[[str, int, int], None]
"""Called as ``reporter(step, done, total)``."""

_reporter: Reporter | None = None


def set_reporter(reporter: Reporter | None) -> None:
    """Install (or remove, with None) the process-wide progress reporter."""
    global _reporter  # noqa: PLW0603 - the single process-wide hook, see module docstring
    _reporter = reporter


def report(step: str, done: int, total: int) -> None:
    """Tell the reporter how far ``step`` got; a no-op when nobody listens."""
    if _reporter is not None:
        _reporter(step, done, total)
