"""Large staged sets are checked against the base they were indexed on: the checks read only what
the base's published snapshot does not already prove (``kb_resources.store.staged_delta``)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from kb_assets.core.llm.units import MODEL_PASS_IDS
from kb_assets.core.models import Artifact, Grounding, Span
from kb_resources.store import commit_reads, reads, snapshot_delta, staged_delta, writes
from kb_resources.store.engine import Store
from kb_resources.store.schema import commit_ref
from tests.storefixtures import PARSER_VERSION, grounded, publish, seed_commit, sha_of, span

BASE, HEAD = sha_of("base"), sha_of("head")
ALPHA, BETA, GAMMA, DELTA = span("alpha", 1, 3), span("beta", 5, 9), span("gamma", 2, 4), span("delta", 6, 8)

KEPT = grounded("call:kept", [Grounding(ALPHA.span_id, "m.py", "caller")])
"""Grounded on a file that keeps its blob: proven by the base."""
MOVED = grounded("call:moved", [Grounding(GAMMA.span_id, "p.py", "caller")])
"""Grounded only on the changed file, whose new blob lacks its span: ungrounded at HEAD."""
MIXED = grounded(
    "call:mixed", [Grounding(GAMMA.span_id, "p.py", "callee"), Grounding(BETA.span_id, "n.py", "caller")]
)
"""Touched by the change (re-checked) but still grounded through the unchanged file."""
TRUSTED = grounded("call:trusted", [Grounding(BETA.span_id, "m.py", "caller")])
"""Never grounded (BETA does not occur in m.py), yet published as the base's: the base stands as proof."""
NEW_BAD = grounded("call:new-bad", [Grounding(ALPHA.span_id, "other.py", "caller")])
NEW_GOOD = grounded("call:new-good", [Grounding(ALPHA.span_id, "m.py", "callee")])

BASE_FILES = {"m.py": [ALPHA], "n.py": [BETA], "p.py": [GAMMA]}
KEEP = {"m.py": "m1", "n.py": "n1"}


def _index(conn: sa.Connection, head_files: dict[str, list[Span]]) -> None:
    """Publish the base, then stage HEAD (m.py and n.py unchanged) without publishing it."""
    seed_commit(conn, BASE, BASE_FILES, blobs={**KEEP, "p.py": "p1"})
    publish(conn, BASE, [KEPT, MOVED, MIXED, TRUSTED])
    seed_commit(conn, HEAD, head_files, blobs={**KEEP, "p.py": "p2"})
    staged: list[Artifact] = [KEPT, MOVED, MIXED, TRUSTED, NEW_BAD, NEW_GOOD]
    writes.insert_artifacts(conn, staged)
    writes.replace_staged(conn, HEAD, "test", [a.artifact_id for a in staged])


@pytest.mark.parametrize(
    "head_files",
    [{"m.py": [ALPHA], "n.py": [BETA], "p.py": [DELTA]}, {"m.py": [ALPHA], "n.py": [BETA]}],
    ids=["changed", "removed"],
)
def test_ungrounded_since_a_base_reads_new_and_touched_artifacts(
    store: Store, head_files: dict[str, list[Span]]
) -> None:
    """New artifacts and base artifacts grounded on a changed or removed file are checked; a base
    artifact whose grounding files all kept their blob is not (its base's check proved it)."""
    with store.engine.begin() as conn:
        _index(conn, head_files)
        since = reads.ungrounded_staged(conn, HEAD, "test", PARSER_VERSION, since=BASE)
        whole = reads.ungrounded_staged(conn, HEAD, "test", PARSER_VERSION)
    assert since == sorted([MOVED.artifact_id, NEW_BAD.artifact_id])
    assert whole == sorted([MOVED.artifact_id, NEW_BAD.artifact_id, TRUSTED.artifact_id])


def test_frame_counts_and_sample_since_a_base_cover_the_new_artifacts(store: Store) -> None:
    """An artifact's row and grounding rows never change, so the frame check and the stored-id
    sample read only the artifacts the base's snapshot lacks."""
    new = sorted([NEW_BAD, NEW_GOOD], key=lambda a: a.artifact_id)
    with store.engine.begin() as conn:
        _index(conn, {"m.py": [ALPHA], "n.py": [BETA], "p.py": [DELTA]})
        counts = [row for b in reads.staged_grounding_batches(conn, HEAD, "test", since=BASE) for row in b]
        sample = reads.staged_sample(conn, HEAD, "test", -1, since=BASE)
        whole = reads.staged_sample(conn, HEAD, "test", -1)
    assert counts == [(a.artifact_id, a.logical_key, 1) for a in new]
    assert sorted(sample) == [a.artifact_id for a in new]
    assert len(whole) == 6


def test_delta_base_only_for_a_large_set_and_a_proven_base(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The base is used only when it is another, published commit located with the same parser
    version, and only for a staged set above ``DELTA_MIN_STAGED`` (a small one is checked whole)."""
    with store.engine.begin() as conn:
        _index(conn, {"m.py": [ALPHA], "n.py": [BETA], "p.py": [DELTA]})
        assert reads.delta_base(conn, HEAD, "test", BASE, PARSER_VERSION) is None  # 6 entries: few
        monkeypatch.setattr(commit_reads, "DELTA_MIN_STAGED", 5)
        assert reads.delta_base(conn, HEAD, "test", BASE, PARSER_VERSION) == BASE
        assert reads.delta_base(conn, HEAD, "test", None, PARSER_VERSION) is None
        assert reads.delta_base(conn, HEAD, "test", HEAD, PARSER_VERSION) is None  # not published
        assert reads.delta_base(conn, HEAD, "test", BASE, "other-parser") is None
        conn.execute(sa.update(commit_ref).where(commit_ref.c.sha == BASE).values(published_at=None))
        assert reads.delta_base(conn, HEAD, "test", BASE, PARSER_VERSION) is None


def test_span_occurrences_since_a_base_are_those_of_changed_files(store: Store) -> None:
    """A blob's spans never change, so the span frame check reads only the occurrences on files
    whose blob differs from the base's: changed and added files, not unchanged ones."""
    with store.engine.begin() as conn:
        seed_commit(conn, BASE, BASE_FILES, blobs={**KEEP, "p.py": "p1"})
        publish(conn, BASE, [KEPT])
        head = {**BASE_FILES, "p.py": [DELTA], "q.py": [GAMMA]}
        seed_commit(conn, HEAD, head, blobs={**KEEP, "p.py": "p2"})
        since = reads.span_occurrences(conn, HEAD, PARSER_VERSION, since=BASE)
        whole = reads.span_occurrences(conn, HEAD, PARSER_VERSION)
    assert [(o.path, o.span_id) for o in since] == [("p.py", DELTA.span_id), ("q.py", GAMMA.span_id)]
    assert [o.path for o in whole] == ["m.py", "n.py", "p.py", "q.py"]


@pytest.mark.parametrize(
    "head_files",
    [{"m.py": [ALPHA], "n.py": [BETA], "p.py": [DELTA]}, {"m.py": [ALPHA], "n.py": [BETA]}],
    ids=["changed", "removed"],
)
def test_the_grounded_check_reads_against_the_base_only_after_a_small_change(
    store: Store, monkeypatch: pytest.MonkeyPatch, head_files: dict[str, list[Span]]
) -> None:
    """``grounded_base`` keeps the base only while the share of the base's files that changed or
    went is at most ``GROUNDED_DELTA_MAX_CHANGED`` (past it, probing every touched base artifact
    costs more than reading the whole set); the other checks' base does not depend on it."""
    monkeypatch.setattr(commit_reads, "DELTA_MIN_STAGED", 5)
    with store.engine.begin() as conn:
        _index(conn, head_files)
        assert staged_delta.changed_share(conn, HEAD, BASE) == pytest.approx(1 / 3)
        assert staged_delta.changed_share(conn, BASE, BASE) == 0
        assert reads.delta_base(conn, HEAD, "test", BASE, PARSER_VERSION) == BASE
        assert reads.grounded_base(conn, HEAD, "test", BASE, PARSER_VERSION) is None  # 1/3 > 2 %
        monkeypatch.setattr(staged_delta, "GROUNDED_DELTA_MAX_CHANGED", 0.5)
        assert reads.grounded_base(conn, HEAD, "test", BASE, PARSER_VERSION) == BASE
        assert reads.grounded_base(conn, HEAD, "test", None, PARSER_VERSION) is None


def test_orphans_since_a_base_count_what_the_base_does_not_prove(store: Store) -> None:
    """Against a base whose own orphan counts were zero, the published snapshot's new entries, its
    shared entries touched by the change and every model pass's entry are counted; a shared entry
    grounded on unchanged files is the base's (TRUSTED: counted only by the whole read)."""
    model_pass = sorted(MODEL_PASS_IDS)[0]
    note = grounded("describe:m", [Grounding(ALPHA.span_id, "gone.py", "target")], kind="description")
    with store.engine.begin() as conn:
        _index(conn, {"m.py": [ALPHA], "n.py": [BETA], "p.py": [DELTA]})
        writes.insert_artifacts(conn, [note])
        writes.replace_staged(conn, BASE, model_pass, [note.artifact_id])
        writes.publish_entries(conn, BASE, model_pass)  # added to the base after its checks ran
        writes.replace_staged(conn, HEAD, model_pass, [note.artifact_id])
        writes.publish_snapshot(
            conn, HEAD, mode="incremental", base_sha=BASE, stats={}, parser_version=PARSER_VERSION
        )
        since = reads.orphans_since(
            conn, HEAD, base=BASE, parser_version=PARSER_VERSION, model_passes=MODEL_PASS_IDS
        )
        whole = reads.orphans(conn, HEAD)
    # MOVED and MIXED lost GAMMA in p.py, NEW_BAD names other.py, the note names gone.py
    assert since == {
        "entries_without_grounding": 0,
        "grounding_without_occurrence": 4,
        "occurrences_without_span": 0,
    }
    # ... and TRUSTED's row names BETA in m.py, which never held it
    assert whole == {**since, "grounding_without_occurrence": 5}


def _scans(plan: dict[str, object], relation: str) -> list[str]:
    """The conditions of every scan of ``relation`` in a JSON plan (empty: unconditioned)."""
    found: list[str] = []
    if plan.get("Relation Name") == relation:
        found.append(" ".join(str(plan.get(k, "")) for k in ("Index Cond", "Filter", "Recheck Cond")).strip())
    for child in plan.get("Plans", []):  # type: ignore[attr-defined]
        found += _scans(child, relation)
    return found


@pytest.mark.parametrize(
    ("statement", "extra"),
    [
        (staged_delta.UNGROUNDED_SINCE, {"extractor_id": "test"}),
        (snapshot_delta.ORPHANS_SINCE, {"model_passes": sorted(MODEL_PASS_IDS)}),
    ],
    ids=["ungrounded", "orphans"],
)
def test_the_unproven_artifacts_are_probed_one_by_one_whatever_the_planner_prefers(
    store: Store, statement: sa.TextClause, extra: dict[str, object]
) -> None:
    """The planner cannot estimate the unproven set (a set difference); on a store with history it
    guessed 50-67k rows for a few dozen and anti-joined every grounding row of the store (seconds
    per check). Made to prefer joins over nested loops and indexes over scans, it must still reach
    the grounding rows only through an artifact's or a span's own key: the probes are per row. So
    must the orphan count reach ``code_span`` (it anti-joined every blob's spans with every span:
    68 ms of a one-file Django commit's 76)."""
    with store.engine.begin() as conn:
        _index(conn, {"m.py": [ALPHA], "n.py": [BETA], "p.py": [DELTA]})
        writes.publish_snapshot(
            conn, HEAD, mode="incremental", base_sha=BASE, stats={}, parser_version=PARSER_VERSION
        )
        conn.execute(sa.text("SET LOCAL enable_nestloop = off"))
        conn.execute(sa.text("SET LOCAL enable_seqscan = off"))
        params = {"sha": HEAD, "base": BASE, "parser_version": PARSER_VERSION, **extra}
        (plan,) = conn.execute(
            sa.text("EXPLAIN (FORMAT JSON) " + getattr(statement, "element", statement).text), params
        ).scalar_one()
    scans = _scans(plan["Plan"], "artifact_derived_from")
    assert scans
    assert all(("artifact_id =" in c or "span_id =" in c) for c in scans), scans
    spans = _scans(plan["Plan"], "code_span")
    assert all("span_id =" in c for c in spans), spans
