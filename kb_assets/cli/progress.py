"""Progress drawn on a terminal: one self-overwriting line on stderr, nothing when piped."""

from __future__ import annotations

from typing import TextIO


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
