"""Gates across a commit history: incremental equals full, and invalidation is exact (Tier-4).

``fixtures/history`` is five commits: a function body edit, a pure reformat (quotes, redundant
parentheses, a comment), lines shifted by a header comment, and a new import.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

import pytest

from kb_assets.core.extractors.imports import ImportsExtractor
from kb_gates.history import invalidation_against_base, invalidation_report
from kb_resources.git.repo import GitRepo
from kb_resources.settings import load_settings
from kb_resources.store import reads
from kb_resources.store.engine import open_store
from kb_resources.store.snapshot_reads import ArtifactRecord, GroundingLine
from tests.gitfixtures import build_repo, commit_tree, init_repo
from tests.kbfixtures import KbEnv

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SUMMARY = re.compile(
    r"\((?P<mode>\w+)\): (?P<files>\d+) files \((?P<parsed>\d+) parsed, (?P<reused>\d+) reused\)"
)
TRACKED_KINDS = ("import_edge", "public_symbol")

# For each step (commit i-1 -> i): which tracked units were added, and which got a new id.
EXPECTED_STEPS: list[tuple[set[str], set[str]]] = [
    (set(), {"public:pkg.compute"}),  # 02: compute's body changed; its import edges did not
    (set(), set()),  # 03: reformatting changes no span id, so nothing
    (set(), set()),  # 04: lines moved, nothing else
    ({"import:pkg.extra->sys"}, set()),  # 05: one new import, the others untouched
]


@pytest.fixture
def history(tmp_path: Path) -> tuple[Path, list[str]]:
    """The history fixture as a git repository and its commit shas, oldest first."""
    repo = tmp_path / "history"
    return repo, build_repo(FIXTURES / "history", repo)


def _ids(env: KbEnv, repo: Path, sha: str) -> dict[tuple[str, str], str]:
    return {
        (r["kind"], r["logical_key"]): r["artifact_id"] for r in env.kb("export", repo, "--sha", sha).jsonl()
    }


def _index_all(env: KbEnv, repo: Path, shas: list[str], *extra: str) -> list[dict[str, str]]:
    summaries = []
    for sha in shas:
        res = env.kb("index", repo, "--sha", sha, *extra)
        assert res.code == 0, res.stderr
        m = SUMMARY.search(res.stdout.splitlines()[0])
        assert m is not None
        summaries.append(m.groupdict())
    return summaries


def test_incremental_snapshots_equal_full_index(kb_env: KbEnv, other_env: KbEnv, history: Any) -> None:
    """HARD gate: indexing the history commit by commit (incrementally) gives, for every commit,
    byte-for-byte the export a --full index of that commit gives in a fresh store; and the parse is
    provably skipped for unchanged files (parsed counts only the changed blob)."""
    repo, shas = history
    incremental = _index_all(kb_env, repo, shas)
    assert [s["mode"] for s in incremental] == ["full"] + ["incremental"] * 4
    assert [s["parsed"] for s in incremental] == ["4", "1", "1", "1", "1"]
    assert [s["reused"] for s in incremental] == ["0", "3", "3", "3", "3"]
    _index_all(other_env, repo, shas, "--full")
    for sha in shas:
        mine = kb_env.kb("export", repo, "--sha", sha).stdout
        assert mine == other_env.kb("export", repo, "--sha", sha).stdout, sha
        assert mine.strip()


def test_tier4_invalidation_is_exact(kb_env: KbEnv, history: Any) -> None:
    """Tier-4 gate: between each parent and child, exactly the units whose grounding spans changed
    get new ids — no over-invalidation (a reformat or shifted lines re-identify nothing), no stale
    survivor (a same id always has the same grounding and payload); the invalidation_exact check
    passes on every commit (kb index exits 0)."""
    repo, shas = history
    _index_all(kb_env, repo, shas)
    with (
        open_store(load_settings(kb_env.environ), GitRepo.open(repo).key()) as store,
        store.engine.connect() as conn,
    ):
        records = [reads.snapshot_records(conn, sha) for sha in shas]
        against_base = [invalidation_against_base(store.engine, sha) for sha in shas[1:]]
    for step, (before, after) in enumerate(itertools.pairwise(records)):
        report = invalidation_report(before, after)
        assert report.exact, (step, report.over_invalidated, report.stale_survivors)
        assert report.compared > 0
        base, in_server = against_base[step]  # the check's way: pairs formed by the server
        assert base == shas[step]
        assert (in_server.compared, in_server.reidentified) == (report.compared, report.reidentified)
        assert in_server.exact
        assert in_server.version_bumped == report.version_bumped == {}
        old = {(r.kind, r.logical_key): r.artifact_id for r in before if r.kind in TRACKED_KINDS}
        new = {(r.kind, r.logical_key): r.artifact_id for r in after if r.kind in TRACKED_KINDS}
        added = {key for _, key in new.keys() - old.keys()}
        changed = {key for (kind, key), aid in new.items() if old.get((kind, key), aid) != aid}
        assert (added, changed) == EXPECTED_STEPS[step], f"step {step + 2}"


def test_shifted_lines_keep_ids_but_move_provenance(kb_env: KbEnv, history: Any) -> None:
    """Location-free identity: a header comment above the imports keeps every id, while the
    exported lines follow the code."""
    repo, shas = history
    _index_all(kb_env, repo, shas[2:4])
    before = {r["logical_key"]: r for r in kb_env.kb("export", repo, "--sha", shas[2]).jsonl()}
    after = {r["logical_key"]: r for r in kb_env.kb("export", repo, "--sha", shas[3]).jsonl()}
    edge = "import:pkg.extra->os"
    assert before[edge]["artifact_id"] == after[edge]["artifact_id"]
    assert (before[edge]["payload"]["lines"], after[edge]["payload"]["lines"]) == ([1], [5])


def test_extractor_version_bump_invalidates_all_its_artifacts(
    kb_env: KbEnv, history: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An extractor version bump gives every artifact of that extractor a new id and leaves every
    other extractor's artifacts alone."""
    repo, shas = history
    _index_all(kb_env, repo, shas[:1])
    before = _ids(kb_env, repo, shas[0])
    monkeypatch.setattr(ImportsExtractor, "version", "bumped")
    _index_all(kb_env, repo, shas[:1])
    after = _ids(kb_env, repo, shas[0])
    assert before.keys() == after.keys()
    for key, aid in before.items():
        assert (after[key] != aid) == (key[0] == "import_edge"), key


CALLER = 'def helper():\n    return 1\n\n\ndef run():\n    """Run it."""\n    helper()\n'
GROWN = CALLER.replace('"""Run it."""', '"""Run it.\n\n    At length.\n    """\n    # and a comment')


def test_call_sites_moved_inside_an_unchanged_span_pass_the_gate(kb_env: KbEnv, tmp_path: Path) -> None:
    """A docstring that grows and a comment added above a call keep the caller's span id (both are
    outside the fingerprint) but move the call site's line: the call edge gets a new id (its
    ``lines`` changed), and the invalidation check counts it as sites moved, not as
    over-invalidation; the exported line follows the code."""
    repo = init_repo(tmp_path / "moved")
    shas = [
        commit_tree(repo, {"pkg/__init__.py": "", "pkg/mod.py": text}, str(n))
        for n, text in enumerate((CALLER, GROWN))
    ]
    _index_all(kb_env, repo, shas)
    edge = "call:pkg.mod.run->pkg.mod.helper"
    before, after = (
        {r["logical_key"]: r for r in kb_env.kb("export", repo, "--sha", sha, "--kind", "call_edge").jsonl()}
        for sha in shas
    )
    assert before[edge]["artifact_id"] != after[edge]["artifact_id"]
    assert [g["span_id"] for g in before[edge]["grounding"]] == [
        g["span_id"] for g in after[edge]["grounding"]
    ]
    assert (before[edge]["payload"]["lines"], after[edge]["payload"]["lines"]) == ([7], [11])
    with open_store(load_settings(kb_env.environ), GitRepo.open(repo).key()) as store:
        base, report = invalidation_against_base(store.engine, shas[1])
    assert base == shas[0]
    assert report.exact, report.over_invalidated
    assert report.sites_moved == 1


def _record(payload: dict[str, Any], artifact_id: str) -> ArtifactRecord:
    grounding = (GroundingLine("a" * 64, "pkg/mod.py", "caller", 5, 7),)
    return ArtifactRecord(
        artifact_id, "call_edge", "call:a->b", "calls", "2", "deterministic", 1.0, payload, grounding
    )


@pytest.mark.parametrize(
    ("after", "over"),
    [
        ({"forms": ["direct"], "site_offsets": {"s": [4]}}, False),  # only the sites moved
        ({"forms": ["import"], "site_offsets": {"s": [4]}}, True),  # and the forms changed
        ({"forms": ["import"], "site_offsets": {"s": [2]}}, True),  # the forms alone changed
    ],
    ids=["sites-moved", "sites-and-forms", "forms"],
)
def test_only_moved_positions_explain_a_new_id(after: dict[str, Any], over: bool) -> None:
    """With unchanged grounding, a new id is explained only by a change of the position keys."""
    report = invalidation_report(
        [_record({"forms": ["direct"], "site_offsets": {"s": [2]}}, "1" * 64)], [_record(after, "2" * 64)]
    )
    assert bool(report.over_invalidated) == over
    assert report.sites_moved == (not over)
