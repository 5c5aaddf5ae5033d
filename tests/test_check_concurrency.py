"""The checks of one step: those that only read the store run together, the others after them and
alone (a recomputation may fork a copy of the process), every verdict reported in the declared
order."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kb_assets.core.extractors.registry import EXTRACTORS
from kb_gates import verdicts
from kb_gates.checks import SNAPSHOT_CHECKS, SPAN_CHECKS, Check, all_checks, concluded, extractor_check_list
from kb_gates.verdicts import Verdict
from kb_resources.git.repo import GitRepo
from tests.gitfixtures import build_repo

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@dataclass
class _Handles:
    """What a verdict reads through (the store counted: made once, before any thread)."""

    workers: int = 1
    verify_sample: int = 1
    verify_max_files: int = 1
    engines: int = 0
    running: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)
    repo: object = None

    def engine(self) -> object:
        self.engines += 1
        return object()

    def git(self) -> object:
        return self.repo

    def limits(self) -> object:
        raise AssertionError("not read here")


def _check(name: str, verdict: object, *, concurrent: bool) -> Check:
    return Check(name, name, verdict, concurrent=concurrent)  # type: ignore[arg-type]


def test_reading_checks_run_together_and_the_others_alone_after_them() -> None:
    """Two reading checks meet at a barrier (one after the other, the first would time out); the
    other check runs when neither is running and no check thread is left."""
    met = threading.Barrier(2, timeout=20)
    order: list[str] = []

    def reading(name: str) -> object:
        def verdict(h: _Handles, sha: str, base: str | None) -> Verdict:
            with h.lock:
                h.running.add(name)
            met.wait()
            with h.lock:
                h.running.discard(name)
                order.append(name)
            return Verdict(True, [], {"name": name, "sha": sha, "base": base})

        return verdict

    def alone(h: _Handles, sha: str, base: str | None) -> Verdict:
        checkers = [t.name for t in threading.enumerate() if t.name.startswith("kb-check")]
        order.append("alone")
        return Verdict(not h.running and not checkers, sorted(h.running) + checkers)

    handles = _Handles()
    checks = [
        _check("a", reading("a"), concurrent=True),
        _check("alone", alone, concurrent=False),
        _check("b", reading("b"), concurrent=True),
    ]
    found = list(concluded(checks, handles, "s" * 40, "base"))  # type: ignore[arg-type]
    assert [v.figures.get("name") for v in found] == ["a", None, "b"]
    assert found[0].figures == {"name": "a", "sha": "s" * 40, "base": "base"}
    assert found[1].passed, found[1].evidence
    assert sorted(order[:2]) == ["a", "b"]
    assert order[2] == "alone"
    assert handles.engines == 1


def test_a_check_that_raises_stops_the_verdicts_at_its_place() -> None:
    """The verdicts before the failing check are given; the exception comes where it stands in the
    order, whether the failing check read concurrently or not."""

    def fine(h: _Handles, sha: str, base: str | None) -> Verdict:
        return Verdict(True, [])

    def broken(h: _Handles, sha: str, base: str | None) -> Verdict:
        raise RuntimeError("gate broke")

    for concurrent in (True, False):
        checks = [
            _check("first", fine, concurrent=True),
            _check("broken", broken, concurrent=concurrent),
            _check("last", fine, concurrent=True),
        ]
        found = concluded(checks, _Handles(), "s" * 40, None)  # type: ignore[arg-type]
        assert next(found).passed
        with pytest.raises(RuntimeError, match="gate broke"):
            next(found)


def test_which_checks_run_beside_others() -> None:
    """Store reads and the cache check (a sample of blobs parsed again, nothing forked) always run
    beside the step's others; the reproducibility gate only where it reads a stored sample."""
    declared = [*SPAN_CHECKS, *SNAPSHOT_CHECKS, *(c for ex in EXTRACTORS for c in extractor_check_list(ex))]
    assert {c.name for c in declared if c.concurrent is True} == {
        "every_artifact_grounded",
        "artifact_frame_valid",
        "span_frame_valid",
        "blob_cache_reproduces",
        "zero_orphans",
        "invalidation_exact",
    }
    assert {c.name for c in declared if callable(c.concurrent)} == {"ids_reproducible"}
    assert all(c.concurrent is verdicts.reads_a_stored_sample for c in declared if callable(c.concurrent))
    stepped = {spec.key.name for check in all_checks() for spec in check.check_specs}
    assert stepped == {c.name for c in declared}


def test_the_reproducibility_gate_runs_beside_others_only_where_it_reads_a_stored_sample(
    tmp_path: Path,
) -> None:
    """Up to ``verify_max_files`` Python files the gate resolves the program again (which may fork
    a copy of the process) and runs alone; above, it reads a stored sample, like the other checks."""
    repo = tmp_path / "history"
    sha = build_repo(FIXTURES / "history", repo)[0]
    git = GitRepo.open(repo)
    files = len(git.python_files(sha))
    assert files > 1
    gate = next(c for c in extractor_check_list(EXTRACTORS[0]) if c.name == "ids_reproducible")
    assert not gate.runs_beside_others(_Handles(verify_max_files=files, repo=git), sha)  # type: ignore[arg-type]
    assert gate.runs_beside_others(_Handles(verify_max_files=files - 1, repo=git), sha)  # type: ignore[arg-type]
