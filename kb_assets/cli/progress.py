"""Progress drawn on a terminal: one self-overwriting line on stderr, nothing when piped."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from kb_assets.indexing.progress import set_reporter


class TerminalProgress:
    """A progress reporter for ``kb_assets.indexing.progress``."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.enabled = stream.isatty()
        self._drawn = False
        self._last = -1

    def __call__(self, step: str, done: int, total: int) -> None:
        if not self.enabled or total <= 0:
            return
        pct = done * 100 // total
        if pct == self._last and done != total:
            return
        self._last = pct
        self.stream.write(f"\r{step}: {done}/{total} files ({pct}%)\x1b[K")
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        """End the progress line so the next output starts clean."""
        if self._drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


@contextmanager
def drawn_progress(stream: TextIO) -> Iterator[None]:
    """Within: long steps report their progress on ``stream`` (a terminal; nothing when piped), and
    the line is cleared on the way out."""
    progress = TerminalProgress(stream)
    set_reporter(progress)
    try:
        yield
    finally:
        progress.close()
        set_reporter(None)
