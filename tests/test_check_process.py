"""The frame checks run in a process of their own (``kb_gates.check_process``) and conclude what
validating in the checking process concludes, whatever happens to that process (that an index
run's own process never imports polars is in ``test_embed_isolation``)."""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections.abc import Iterator

import pytest

from kb_gates.check_process import CheckProcess, Rows
from kb_gates.frames import row_errors

GOOD = [c * 64 for c in "abcdef"]
ARTIFACTS: list[Rows] = [[(GOOD[0], "k0", 1), (GOOD[1], "k1", 2)], [(GOOD[2], "k2", 1)]]
BAD_ARTIFACTS: list[Rows] = [
    [(GOOD[0], "k0", 1), (GOOD[1], "k1", 1)],
    [(GOOD[1], "k1", 1), ("not-hex", "k2", 0)],  # GOOD[1] again across the boundary; a bad id; no grounding
]
SPANS: list[Rows] = [[(GOOD[0], "m.py", 1, 3)], [(GOOD[1], "m.py", 5, 4), ("xyz", "", 0, 1)]]


@pytest.fixture
def checks() -> Iterator[CheckProcess]:
    made = CheckProcess()
    yield made
    made.stop()


@pytest.mark.parametrize(
    ("frame", "batches", "unique"),
    [
        ("artifact", ARTIFACTS, "artifact_id"),
        ("artifact", BAD_ARTIFACTS, "artifact_id"),
        ("span", SPANS, None),
    ],
)
def test_the_helper_concludes_what_validating_here_concludes(
    checks: CheckProcess, frame: str, batches: list[Rows], unique: str | None
) -> None:
    """Good and bad frames, a value repeated across two batches included: the helper's rows checked
    and errors are exactly the in-process validation's, and it ran in another process."""
    here = row_errors(frame, batches, ordered_unique=unique)
    assert checks.frame_errors(frame, lambda: iter(batches), ordered_unique=unique) == here
    pid = checks.helper_pid()
    assert pid is not None
    assert pid != os.getpid()
    assert (here[1] == []) == (batches is ARTIFACTS)


def test_a_helper_that_dies_midway_leaves_the_check_to_this_process(checks: CheckProcess) -> None:
    """The helper is killed after it got the first batch: the rows are read again and validated
    here, to the same answer; the next check starts a new helper."""
    checks.start()
    first = checks.helper_pid()
    assert first is not None
    reads = 0

    def read() -> Iterator[Rows]:
        nonlocal reads
        reads += 1
        yield BAD_ARTIFACTS[0]
        if reads == 1:
            os.kill(first, signal.SIGKILL)  # reaped by the checks
        yield from BAD_ARTIFACTS[1:]

    expected = row_errors("artifact", BAD_ARTIFACTS, ordered_unique="artifact_id")
    assert checks.frame_errors("artifact", read, ordered_unique="artifact_id") == expected
    assert reads == 2
    assert checks.frame_errors("span", lambda: iter(SPANS)) == row_errors("span", SPANS)
    assert checks.helper_pid() not in (None, first)


def test_a_read_that_fails_midway_does_not_confuse_the_next_check(checks: CheckProcess) -> None:
    """The store read raises after one batch: the check raises it, and the next check (on the
    same or a new helper) still gets its own answer, not what was left of the failed frame."""

    def failing() -> Iterator[Rows]:
        yield ARTIFACTS[0]
        raise ConnectionError("store went away")

    with pytest.raises(ConnectionError):
        checks.frame_errors("artifact", failing, ordered_unique="artifact_id")
    assert checks.frame_errors("span", lambda: iter(SPANS)) == row_errors("span", SPANS)
    assert checks.frame_errors("artifact", lambda: iter(ARTIFACTS), ordered_unique="artifact_id") == (3, [])


def test_a_broken_frame_is_reported_not_hidden(checks: CheckProcess) -> None:
    """A frame the validation itself cannot take (a row of the wrong width) fails the check with
    the helper's error; the helper stays usable."""
    checks.start()
    helper = checks.helper_pid()
    with pytest.raises(RuntimeError, match="artifact frame check failed"):
        checks.frame_errors("artifact", lambda: iter([[(GOOD[0], "k0")]]), ordered_unique="artifact_id")
    assert checks.frame_errors("artifact", lambda: iter(ARTIFACTS), ordered_unique="artifact_id") == (3, [])
    assert checks.helper_pid() == helper


def _in_a_pool_worker() -> tuple[int | None, tuple[int, list[str]]]:
    checks = CheckProcess()
    answer = checks.frame_errors("span", lambda: iter(SPANS))
    return checks.helper_pid(), answer


def test_a_daemonic_process_validates_its_frames_itself() -> None:
    """A pool's worker (daemonic: it may not start processes) runs its frame checks without a
    helper, to the same answer."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        pid, answer = pool.apply(_in_a_pool_worker)
    assert pid is None
    assert answer == row_errors("span", SPANS)
