"""How fast this host is right now, on a fixed workload that no change of knowbase touches.

    python bench/host_speed.py [--rounds 5]

This machine's speed varies from hour to hour by up to ~2x (a shared host: ``kb export``, which
no change of a stop touched, took 5.40 s in one hour and 9.69 s a few hours later), and it shows
as neither steal time nor a lower clock. So a figure of ``make bench`` compares with another only
beside a measure of the host taken at the same time: ``make bench`` times this workload before
its first command and after its last, and prints both with their ratio to ``REFERENCE_SECONDS``.

The workload is one core's worth of the kinds of work an index run does, without knowbase's
code (so that making knowbase faster never moves it): interpreter-bound building, sorting and
grouping of small tuples and strings; a JSON round trip; a tree-sitter parse (the pinned parser
the index uses); hashing and compression of bytes. Its inputs are generated from fixed seeds, and
it returns a digest of what it computed, the same on every run and every host
(``tests/test_bench_host_speed.py``): a faster round is a faster host, not less work.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import time
import zlib
from dataclasses import dataclass

import tree_sitter_python
from tree_sitter import Language, Parser

REFERENCE_SECONDS = 0.340
"""The workload's median round at stop 54 (2026-12-07, 19:50 UTC), in an hour when Django's full
index took 14.9 s: a later figure divided by a later ``ratio`` is that figure in that hour's
terms (roughly: the index uses two cores and the server, the workload one core)."""

DIGEST = "f8e9472372e24e70a6f8d0e4e3e07827918982dcca44e91f344fcc45fb41e475"
"""What ``workload`` computes: a change to the workload changes it, and then ``REFERENCE_SECONDS``
must be measured again, or the ratios before and after the change do not compare."""

ROUNDS = 5

_MODULES = 80
"""Generated modules a round parses (~3.4 kB each, a small module)."""


def _words(seed: int, count: int) -> list[str]:
    """``count`` identifiers from a linear congruential generator: the same on every host."""
    state, out = seed, []
    for _ in range(count):
        state = (state * 1103515245 + 12345) % 2**31
        out.append(f"n{state % 9973:04d}_{state % 17}")
    return out


def _module(k: int) -> bytes:
    """A generated Python module: classes of methods that call each other."""
    names = _words(k + 1, 60)
    lines = [f"import os\nfrom pkg.mod{k % 7} import {names[0]}\n"]
    for c in range(4):
        lines.append(f"\nclass C{k}_{c}({names[c]}):\n    '''doc'''\n")
        for m in range(5):
            a, b = names[(c * 5 + m) % 60], names[(c * 7 + m * 3) % 60]
            lines.append(
                f"    def {a}(self, x: int, y: str = 'v') -> int:\n"
                f"        z = [self.{b}(i, y) for i in range(x) if i % {m + 2}]\n"
                f"        return sum(z) + {c * 100 + m} if z else os.getpid()\n"
            )
    return "".join(lines).encode()


def workload() -> str:
    """One round: the digest of everything it computed (the same on every run)."""
    digest = hashlib.sha256()
    words = _words(7, 120_000)
    pairs = sorted((w[-2:], w, i) for i, w in enumerate(words))
    groups: dict[str, list[int]] = {}
    for key, _, i in pairs:
        groups.setdefault(key, []).append(i)
    text = json.dumps(groups, sort_keys=True)
    digest.update(str(len(json.loads(text))).encode())
    parser = Parser(Language(tree_sitter_python.language()))
    for k in range(_MODULES):
        source = _module(k)
        tree = parser.parse(source)
        digest.update(f"{tree.root_node.descendant_count}".encode())
        digest.update(zlib.decompress(zlib.compress(source, 6)))  # the same bytes with any zlib
    digest.update(hashlib.sha256(text.encode() * 8).digest())
    return digest.hexdigest()


@dataclass(frozen=True, slots=True)
class HostSpeed:
    """The workload's rounds in seconds (wall: on one busy core, what a command also sees)."""

    rounds: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.rounds)

    @property
    def ratio(self) -> float:
        """How many times slower than ``REFERENCE_SECONDS`` the host is now (below 1: faster)."""
        return self.median / REFERENCE_SECONDS

    def line(self, label: str) -> str:
        """One line for ``make bench``'s output."""
        return (
            f"{label:<34} {self.median:8.3f} s a round (median of {len(self.rounds)}, "
            f"{min(self.rounds):.3f}-{max(self.rounds):.3f}): {self.ratio:.2f}x the reference's "
            f"{REFERENCE_SECONDS:.3f} s"
        )


def measure(rounds: int = ROUNDS) -> HostSpeed:
    """Time ``rounds`` rounds of the workload after one untimed round (imports, caches)."""
    workload()
    took = []
    for _ in range(rounds):
        start = time.perf_counter()
        workload()
        took.append(time.perf_counter() - start)
    return HostSpeed(tuple(took))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    args = parser.parse_args()
    print(measure(args.rounds).line("host speed"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
