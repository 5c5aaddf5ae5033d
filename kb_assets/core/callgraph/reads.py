"""Which files a resolution read: the dependency record that lets the next commit re-resolve only
the files a change can reach (``resolutions``).

A read set is an ``int`` used as a bit set over the program's file paths in sorted order: every
accessor of a file's call facts (``Scopes``), every symbol-table lookup (the modules it visits)
and every hit of a per-file cache marks the file's bit into ``Reads.bits``, the accumulator of the
computation in progress. A memoized computation starts from an empty accumulator, keeps what it
read beside its answer and adds it back to its caller's, and every later hit of that answer adds it
again (``guards``): so a file's read set holds everything its answers depend on, whichever file's
resolution first computed a shared answer. An int rather than a set: the union of two read sets,
the common operation, is one C loop over a few dozen machine words.

Without a path map (``Reads(())``) every bit is 0: the bookkeeping costs a few additions and
memoized answers keep no read set (a one-shot ``kb index`` never re-resolves anything).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping


class Reads:
    """The bit of every file, and the read set of the computation in progress."""

    __slots__ = ("_shared", "bit", "bits", "module_bit")

    def __init__(self, paths: Iterable[str], modules: Mapping[str, str] | None = None) -> None:
        """``paths``: the program's files; ``modules``: dotted module -> path (the module map)."""
        self.bit: dict[str, int] = {path: 1 << i for i, path in enumerate(sorted(paths))}
        self.module_bit: dict[str, int] = {
            module: self.bit[path] for module, path in (modules or {}).items() if path in self.bit
        }
        self.bits = 0
        self._shared: dict[int, int] = {}

    def stop(self) -> None:
        """Record nothing from now on (the build that needed the read sets is over)."""
        self.bit, self.module_bit, self.bits, self._shared = {}, {}, 0, {}

    def kept(self, read: int) -> int:
        """``read`` as the one object of its value, to be kept beside a memoized answer: a build
        of Django's call graph keeps ~300k read sets of only ~14k distinct values, which as
        separate ints of up to ~380 bytes each held 64 MiB during the build."""
        return self._shared.setdefault(read, read)

    def mark(self, path: str) -> None:
        """The computation in progress read ``path``'s facts."""
        self.bits |= self.bit.get(path, 0)

    def mark_modules(self, modules: Iterable[str]) -> None:
        """The computation in progress read these modules' symbol facts (a symbol-table lookup)."""
        module_bit = self.module_bit
        for module in modules:
            self.bits |= module_bit.get(module, 0)

    def of(self, paths: Iterable[str]) -> int:
        """The read set of some files."""
        bits = 0
        for path in paths:
            bits |= self.bit.get(path, 0)
        return bits
