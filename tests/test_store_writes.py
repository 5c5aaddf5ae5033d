"""Bulk writes are idempotent, publishing is atomic, and reads resolve grounding to lines per commit."""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

import pytest
import sqlalchemy as sa

from kb_assets.core.models import Artifact, Gap, Grounding, ParsedBlob
from kb_resources.store import bulk, commit_reads, reads, snapshot_reads, writes
from kb_resources.store.bulk import stored_keys
from kb_resources.store.engine import Store
from kb_resources.store.schema import metadata, occurrences
from tests.storefixtures import (
    COMMITTED_AT,
    PARSER_VERSION,
    RAW_ARTIFACT,
    encode_facts,
    encoded,
    grounded,
    publish,
    seed_commit,
    sha_of,
    span,
    table_dump,
)

SHA1, SHA2 = sha_of("c1"), sha_of("c2")
ALPHA, BETA = span("alpha", 1, 3), span("beta", 5, 9)
TIMESTAMPS = ("published_at", "updated_at")
AWKWARD = [
    "dir with space/ünïcødé 模块.py",
    "tab\there.py",
    "new\nline.py",
    "back\\slash\\N.py",
    "quote\"'s,comma.py",
]


def _everything(store: Store) -> dict[str, list[tuple[object, ...]]]:
    with store.engine.connect() as conn:
        return {name: table_dump(conn, t, skip=TIMESTAMPS) for name, t in metadata.tables.items()}


def _write_all(store: Store) -> None:
    """One full indexing pass worth of writes for commit SHA1."""
    item = grounded("call:alpha->beta", [Grounding(ALPHA.span_id, "m.py", "caller")])
    with store.engine.begin() as conn:
        seed_commit(conn, SHA1, {"m.py": [ALPHA, BETA], "n.py": [BETA]})
        publish(conn, SHA1, [item])
        writes.replace_gaps(conn, SHA1, "parse", [Gap("n.py", "syntax_error", "line 3", 3)])
        writes.set_branch(conn, "main", SHA1)


def test_writing_the_same_rows_twice_changes_nothing(store: Store) -> None:
    """Every write is idempotent: a second identical pass leaves every table exactly as it was
    (publish and branch timestamps aside), and content-addressed inserts report 0 new rows."""
    _write_all(store)
    first = _everything(store)
    _write_all(store)
    assert _everything(store) == first
    blob = ParsedBlob(sha_of("blob:m.py:" + SHA1), (ALPHA, BETA), line_count=99)
    with store.engine.begin() as conn:
        assert writes.insert_encoded_blobs(conn, PARSER_VERSION, [encoded(blob)]) == 0
        assert (
            writes.insert_artifacts(
                conn, [grounded("call:alpha->beta", [Grounding(ALPHA.span_id, "m.py", "caller")])]
            )
            == 0
        )


def test_publishing_is_atomic_for_readers(store: Store) -> None:
    """A reader on another connection sees the previous snapshot until the publishing transaction
    commits, then the new one in full; a rolled-back publish leaves the previous snapshot intact."""
    old = grounded("call:old", [Grounding(ALPHA.span_id, "m.py", "caller")])
    new = grounded("call:new", [Grounding(BETA.span_id, "m.py", "caller")])
    with store.engine.begin() as conn:
        seed_commit(conn, SHA1, {"m.py": [ALPHA, BETA]})
        publish(conn, SHA1, [old])
    with store.engine.connect() as writer, store.engine.connect() as reader:
        publish(writer, SHA1, [new])
        assert [r.logical_key for r in reads.snapshot_records(reader, SHA1)] == ["call:old"]
        reader.rollback()
        writer.rollback()
        assert [r.logical_key for r in reads.snapshot_records(reader, SHA1)] == ["call:old"]
        reader.rollback()
        publish(writer, SHA1, [old, new])
        writer.commit()
        assert [r.logical_key for r in reads.snapshot_records(reader, SHA1)] == ["call:new", "call:old"]
        assert reads.is_published(reader, SHA1)
        assert reads.artifact_counts(reader, SHA1) == {"call_edge": 2}


def test_snapshot_records_take_their_lines_from_the_commit_s_occurrences(store: Store) -> None:
    """The same artifact shows the lines of its span at each commit; a span occurring twice in the
    grounded file yields both occurrences; records sort by logical key then kind; kinds filter."""
    moved = span("alpha", 4, 6)
    item = grounded("call:alpha", [Grounding(ALPHA.span_id, "m.py", "caller")])
    other = grounded("a:first", [Grounding(BETA.span_id, "m.py", "target")], kind="entity")
    with store.engine.begin() as conn:
        seed_commit(conn, SHA1, {"m.py": [ALPHA, BETA]})
        publish(conn, SHA1, [item, other])
        seed_commit(conn, SHA2, {"m.py": [moved, BETA, span("alpha", 20, 22)]})
        publish(conn, SHA2, [item])
    with store.engine.connect() as conn:
        at1 = reads.snapshot_records(conn, SHA1)
        at2 = reads.snapshot_records(conn, SHA2)
        only_entities = reads.snapshot_records(conn, SHA1, ["entity"])
        assert reads.orphans(conn, SHA1) == dict.fromkeys(
            ("entries_without_grounding", "grounding_without_occurrence", "occurrences_without_span"), 0
        )
    assert [(r.logical_key, r.kind) for r in at1] == [("a:first", "entity"), ("call:alpha", "call_edge")]
    assert [(g.start_line, g.end_line) for g in at1[1].grounding] == [(1, 3)]
    assert [(g.start_line, g.end_line) for g in at2[0].grounding] == [(4, 6), (20, 22)]
    assert at1[1].artifact_id == at2[0].artifact_id
    assert at2[0].payload == {"key": "call:alpha"}
    assert [r.logical_key for r in only_entities] == ["a:first"]


def test_a_snapshot_read_a_batch_at_a_time_is_whole_and_shares_its_strings(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A whole snapshot is fetched a batch at a time (``kb export`` held every row at once, the MCP
    server every edge): with batches smaller than the snapshot the records are the same, through
    either read, and every grounding edge that names a span or a file holds the one str object of
    that name."""
    items = [
        grounded(
            f"call:f{i}", [Grounding(ALPHA.span_id, "m.py", "caller"), Grounding(BETA.span_id, "m.py", "via")]
        )
        for i in range(7)
    ]
    with store.engine.begin() as conn:
        seed_commit(conn, SHA1, {"m.py": [ALPHA, BETA]})
        publish(conn, SHA1, items)
    with store.engine.connect() as conn:
        whole = reads.snapshot_records(conn, SHA1)
    monkeypatch.setattr(snapshot_reads, "GROUNDING_BATCH", 2)
    monkeypatch.setattr(snapshot_reads, "RECORD_BATCH", 3)
    with store.engine.connect() as conn:
        batched = reads.snapshot_records(conn, SHA1)
        loaded = reads.load_snapshot(conn, SHA1).records
    assert batched == whole
    assert loaded == whole
    assert [r.logical_key for r in batched] == [f"call:f{i}" for i in range(7)]
    assert all([g.role for g in r.grounding] == ["caller", "via"] for r in batched)
    for records in (batched, loaded):
        edges = [g for r in records for g in r.grounding]
        assert len({id(g.span_id) for g in edges}) == 2
        assert len({id(g.path) for g in edges}) == 1


@pytest.mark.parametrize("few_staged", [commit_reads.FEW_STAGED, 0], ids=["few", "many"])
def test_orphans_counts_grounding_without_an_occurrence(
    store: Store, few_staged: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A snapshot artifact grounded at a path where its span does not occur is counted as an orphan,
    and the every_artifact_grounded read names it whichever plan a staged set of its size gets."""
    monkeypatch.setattr(commit_reads, "FEW_STAGED", few_staged)
    item = grounded("call:lost", [Grounding(ALPHA.span_id, "gone.py", "caller")])
    fine = grounded("call:alpha", [Grounding(ALPHA.span_id, "m.py", "caller")])
    with store.engine.begin() as conn:
        seed_commit(conn, SHA1, {"m.py": [ALPHA]})
        publish(conn, SHA1, [item, fine])
        assert reads.orphans(conn, SHA1)["grounding_without_occurrence"] == 1
        assert reads.ungrounded_staged(conn, SHA1, "test", PARSER_VERSION) == [item.artifact_id]
        # The large-set plan's own settings do not outlive the read.
        assert conn.exec_driver_sql("SHOW enable_mergejoin").scalar() == "on"
        counts = [row for batch in reads.staged_grounding_batches(conn, SHA1, "test") for row in batch]
        assert counts == sorted([(item.artifact_id, "call:lost", 1), (fine.artifact_id, "call:alpha", 1)])
        lost = next(r for r in reads.snapshot_records(conn, SHA1) if r.logical_key == "call:lost")
    assert lost.grounding[0].start_line is None


def test_orphans_count_each_broken_link_once(store: Store) -> None:
    """The counts come from one pass over the entries and their grounding rows: an entry with no
    grounding row counts once, a grounding row that occurs nowhere counts once (not its
    artifact's other rows), and a span occurring twice in one file is one occurrence's worth."""
    twice = grounded("call:twice", [Grounding(ALPHA.span_id, "m.py", "caller")])
    lost = grounded(
        "call:lost", [Grounding(BETA.span_id, "m.py", "caller"), Grounding(ALPHA.span_id, "m.py", "via")]
    )
    bare = "d" * 64  # written past the application: the COMMIT would refuse it, so none happens
    again = dataclasses.replace(ALPHA, start_line=20, end_line=22)
    with store.engine.connect() as conn:
        seed_commit(conn, SHA1, {"m.py": [ALPHA, again], "n.py": [BETA]})
        writes.insert_artifacts(conn, [twice, lost])
        conn.execute(RAW_ARTIFACT, {"aid": bare})
        writes.replace_staged(conn, SHA1, "test", [twice.artifact_id, lost.artifact_id, bare])
        writes.publish_snapshot(
            conn, SHA1, mode="full", base_sha=None, stats={}, parser_version=PARSER_VERSION
        )
        counts = reads.orphans(conn, SHA1)
        conn.rollback()
    assert counts == {
        "entries_without_grounding": 1,
        "grounding_without_occurrence": 1,
        "occurrences_without_span": 0,
    }


def test_an_artifacts_payload_text_is_stored_as_given(store: Store) -> None:
    """The row takes the payload's canonical JSON the builder made for the id (``payload_json``)
    as it is, and encodes the payload itself only for an artifact without one."""
    given = grounded("call:given", [Grounding(ALPHA.span_id, "m.py", "caller")], payload={"n": 1})
    plain = grounded("call:plain", [Grounding(BETA.span_id, "m.py", "caller")], payload={"n": 2})
    # A text that differs from the payload shows which one the row was made from.
    given = dataclasses.replace(given, payload_json='{"n":3}')
    with store.engine.begin() as conn:
        seed_commit(conn, SHA1, {"m.py": [ALPHA, BETA]})
        assert writes.insert_artifacts(conn, [given, plain]) == 2
        stored: dict[str, object] = dict(
            conn.execute(sa.text("SELECT logical_key, payload FROM artifact")).all()
        )
    assert stored == {"call:given": {"n": 3}, "call:plain": {"n": 2}}


def test_insert_artifacts_sends_only_what_is_not_stored(store: Store) -> None:
    """A batch that mixes stored and new artifacts writes the new ones with all their grounding and
    leaves the stored ones' rows as they were; ``stored_keys`` tells the two apart."""
    old = grounded("call:old", [Grounding(ALPHA.span_id, "m.py", "caller")])
    new = grounded(
        "call:new", [Grounding(ALPHA.span_id, "m.py", "caller"), Grounding(BETA.span_id, "m.py", "callee")]
    )
    with store.engine.begin() as conn:
        seed_commit(conn, SHA1, {"m.py": [ALPHA, BETA]})
        assert writes.insert_artifacts(conn, [old]) == 1
    before = _everything(store)
    with store.engine.begin() as conn:
        conn.exec_driver_sql("SET LOCAL random_page_cost = 3.5")
        assert stored_keys(conn, "artifact", "artifact_id", [old.artifact_id, new.artifact_id]) == {
            old.artifact_id
        }
        # The probe's own planner setting does not outlive it.
        assert conn.exec_driver_sql("SHOW random_page_cost").scalar() == "3.5"
        assert writes.insert_artifacts(conn, [new, old]) == 1
        publish(conn, SHA1, [old, new])
    after = _everything(store)
    assert next(r for r in after["artifact"] if r not in before["artifact"])[0] == new.artifact_id
    added = [r for r in after["artifact_derived_from"] if r not in before["artifact_derived_from"]]
    assert sorted(r[:2] for r in added) == sorted(
        [(new.artifact_id, ALPHA.span_id), (new.artifact_id, BETA.span_id)]
    )
    with store.engine.connect() as conn:
        records = {r.logical_key: r for r in reads.snapshot_records(conn, SHA1)}
    assert [g.span_id for g in records["call:old"].grounding] == [ALPHA.span_id]
    assert len(records["call:new"].grounding) == 2


def test_insert_artifacts_writes_a_repeated_artifact_or_edge_once(store: Store) -> None:
    """Grounding rows go in by a plain COPY (no ON CONFLICT): an artifact twice in a batch, or an
    edge twice in one artifact's grounding (artifacts not made by ``build_artifacts`` may have
    one), is still one row each, and the artifact counts once."""
    edge = Grounding(ALPHA.span_id, "m.py", "caller")
    base = grounded("call:twice", [edge])
    doubled = dataclasses.replace(base, grounding=(edge, edge))
    with store.engine.begin() as conn:
        seed_commit(conn, SHA1, {"m.py": [ALPHA, BETA]})
        assert writes.insert_artifacts(conn, [doubled, base, doubled]) == 1
    rows = _everything(store)["artifact_derived_from"]
    assert [r[:4] for r in rows] == [(base.artifact_id, ALPHA.span_id, "m.py", "caller")]


def test_an_artifact_stored_meanwhile_by_another_writer_is_skipped_not_an_error(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """New artifacts go in by a plain COPY; when one of them was stored by another writer after
    ``stored_keys`` looked (here: ``stored_keys`` answers as it would have just before), the COPY
    is rolled back to its savepoint and the batch goes through ``ON CONFLICT``: the other
    writer's rows stay as they were, the new artifact is written once with its grounding, and the
    caller's transaction goes on."""
    old = grounded("call:old", [Grounding(ALPHA.span_id, "m.py", "caller")])
    new = grounded("call:new", [Grounding(BETA.span_id, "m.py", "callee")])
    with store.engine.begin() as conn:
        seed_commit(conn, SHA1, {"m.py": [ALPHA, BETA]})
        assert writes.insert_artifacts(conn, [old]) == 1
    monkeypatch.setattr(writes, "stored_keys", lambda *args, **kwargs: set())
    with store.engine.begin() as conn:
        assert writes.insert_artifacts(conn, [new, old]) == 1
        publish(conn, SHA1, [old, new])
    rows = _everything(store)
    assert sorted(str(r[0]) for r in rows["artifact"]) == sorted([old.artifact_id, new.artifact_id])
    assert sorted(r[:2] for r in rows["artifact_derived_from"]) == sorted(
        [(old.artifact_id, ALPHA.span_id), (new.artifact_id, BETA.span_id)]
    )


def test_a_copy_waits_for_a_writer_of_the_same_artifact_and_then_skips_it(store: Store) -> None:
    """Two writers of one new artifact at once: the second's COPY waits for the first's
    transaction, and once that commits, writes only what the first did not (no unique violation
    reaches the caller, no grounding row twice)."""
    shared = grounded("call:shared", [Grounding(ALPHA.span_id, "m.py", "caller")])
    own = grounded("call:own", [Grounding(BETA.span_id, "m.py", "callee")])
    with store.engine.begin() as conn:
        seed_commit(conn, SHA1, {"m.py": [ALPHA, BETA]})
    first = store.engine.connect()
    first.begin()
    assert writes.insert_artifacts(first, [shared]) == 1
    found: list[int] = []
    second = threading.Thread(target=lambda: found.append(_insert_in_own_transaction(store, [own, shared])))
    second.start()
    second.join(timeout=1.0)
    assert second.is_alive()  # waiting for the first writer's transaction
    first.commit()
    first.close()
    second.join(timeout=30)
    assert found == [1]
    rows = _everything(store)
    assert sorted(str(r[0]) for r in rows["artifact"]) == sorted([shared.artifact_id, own.artifact_id])
    assert len(rows["artifact_derived_from"]) == 2


def _insert_in_own_transaction(store: Store, artifacts: list[Artifact]) -> int:
    with store.engine.begin() as conn:
        return writes.insert_artifacts(conn, artifacts)


def test_copy_round_trips_awkward_text(store: Store) -> None:
    """COPY survives spaces, unicode, tabs, newlines, backslashes and quotes in every text field,
    and arbitrary bytes in parsed facts."""
    files = {path: [span(f"f_{i}\t\\N\n", 1, 2)] for i, path in enumerate(AWKWARD)}
    weird = "\\N\t\n\r\\\"'"
    gaps = [Gap(path, "syntax_error", f"detail {weird} {path}", None) for path in AWKWARD]
    items = [
        grounded(f"k:{p}", [Grounding(s[0].span_id, p, weird)], payload={"s": weird})
        for p, s in files.items()
    ]
    blob = ParsedBlob(sha_of("facts"), (), gaps=(Gap("", "r\t", weird, 7),), line_count=1)
    with store.engine.begin() as conn:
        seed_commit(conn, SHA1, files)
        publish(conn, SHA1, items)
        writes.replace_gaps(conn, SHA1, "parse", gaps)
        writes.insert_encoded_blobs(conn, "raw", [encoded(blob, lambda facts: b"\x00\\x00\t\n\xff")])
    with store.engine.connect() as conn:
        assert [f.path for f in reads.commit_files(conn, SHA1)] == sorted(AWKWARD)
        assert sorted(o.path for o in reads.span_occurrences(conn, SHA1)) == sorted(AWKWARD)
        assert {o.fq_symbol_path for o in reads.span_occurrences(conn, SHA1)} == {
            s[0].fq_symbol_path for s in files.values()
        }
        assert reads.gaps(conn, SHA1) == [Gap(g.path, g.reason, g.detail, None, "parse") for g in gaps]
        records = reads.snapshot_records(conn, SHA1)
        cached = reads.load_parsed_blobs(conn, "raw", [blob.blob_id])[blob.blob_id]
    assert {(r.grounding[0].path, r.grounding[0].role, r.payload["s"]) for r in records} == {
        (p, weird, weird) for p in AWKWARD
    }
    assert cached.facts == b"\x00\\x00\t\n\xff"
    assert cached.gaps == (Gap("", "r\t", weird, 7),)


def test_parse_cache_round_trips_spans_in_blob_order(store: Store) -> None:
    """load_parsed_blobs returns each blob's spans in order, its facts and line count, in bulk;
    parsed_blob_ids reports exactly the cached blobs of a parser version."""
    blobs = [
        ParsedBlob(sha_of(f"b{i}"), (ALPHA, BETA) if i % 2 else (BETA,), {"i": i}, (), 10 + i)
        for i in range(50)
    ]
    with store.engine.begin() as conn:
        writes.insert_encoded_blobs(conn, PARSER_VERSION, map(encoded, blobs))
    wanted = [b.blob_id for b in blobs] + [sha_of("never parsed")]
    with store.engine.connect() as conn:
        assert reads.parsed_blob_ids(conn, PARSER_VERSION, wanted) == {b.blob_id for b in blobs}
        assert reads.parsed_blob_ids(conn, "other", wanted) == set()
        cached = reads.load_parsed_blobs(conn, PARSER_VERSION, wanted)
    assert set(cached) == {b.blob_id for b in blobs}
    for b in blobs:
        assert cached[b.blob_id] == (b.spans, encode_facts(b.facts), (), b.line_count)


def test_analyze_if_large_refreshes_statistics_after_a_load_large_for_the_table(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bulk load is analyzed when the table was never analyzed or the load is a tenth or more
    of what it held at its last analysis; a small share of a large table is left to autovacuum."""
    monkeypatch.setattr(bulk, "ANALYZE_AFTER_ROWS", 100)

    def load_and_count(conn: sa.Connection, rows: int) -> float:
        conn.exec_driver_sql(f"INSERT INTO scratch SELECT generate_series(1, {rows})")
        bulk.analyze_if_large(conn, "scratch", rows)
        held = conn.exec_driver_sql("SELECT reltuples FROM pg_class WHERE relname = 'scratch'").scalar_one()
        return float(held)

    with store.engine.begin() as conn:
        conn.exec_driver_sql("CREATE TEMP TABLE scratch (x int)")  # autovacuum never touches it
        assert load_and_count(conn, 50) == -1  # below ANALYZE_AFTER_ROWS: never analyzed
        assert load_and_count(conn, 2000) == 2050  # never analyzed before
        assert load_and_count(conn, 300) == 2350  # 300 >= 2050 / 10
        assert load_and_count(conn, 200) == 2350  # 200 < 2350 / 10: left as it was


def _reltuples(conn: sa.Connection, table: str) -> float:
    """The table's row count as the planner knows it (-1: never analyzed), read in its own transaction."""
    with conn.begin():
        sql = "SELECT reltuples FROM pg_class WHERE relname = %s"
        return float(conn.exec_driver_sql(sql, (table,)).scalar_one())


def test_a_load_log_refreshes_statistics_once_for_the_whole_load(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batches written in their own transactions through a ``LoadLog`` leave the table's statistics
    alone; ``refresh_statistics`` then analyzes it once, for their total (each batch alone is below
    the threshold, the three together are not)."""
    monkeypatch.setattr(bulk, "ANALYZE_AFTER_ROWS", 100)
    log = bulk.LoadLog()
    with store.engine.connect() as conn:
        conn.exec_driver_sql("CREATE TEMP TABLE scratch (x int)")  # one session: the table lives on
        conn.commit()
        for start in (0, 60, 120):
            with conn.begin():
                rows = [(i,) for i in range(start, start + 60)]
                bulk.copy_loaded_rows(conn, "scratch", ("x",), rows, log=log)
            assert _reltuples(conn, "scratch") == -1
        with conn.begin():
            bulk.refresh_statistics(conn, log)
        assert _reltuples(conn, "scratch") == 180
        assert log.rows == {"scratch": 180}


def test_a_large_artifact_load_analyzes_the_key_columns_only(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ANALYZE artifact`` after a large load skips the JSON payload (``ANALYSES``): the
    planner gets statistics for the keys it plans on."""
    monkeypatch.setattr(bulk, "ANALYZE_AFTER_ROWS", 1)
    artifacts = [grounded(f"call:a->b{i}", [Grounding(ALPHA.span_id, "m.py", "caller")]) for i in range(3)]
    with store.engine.begin() as conn:
        seed_commit(conn, SHA1, {"m.py": [ALPHA, BETA]})
        writes.insert_artifacts(conn, artifacts)
    with store.engine.connect() as conn:
        analyzed = set(conn.scalars(sa.text("SELECT attname FROM pg_stats WHERE tablename = 'artifact'")))
    assert analyzed == set(bulk.ANALYSES["artifact"].columns or ())


def test_a_large_artifact_load_is_analyzed_from_a_small_sample_and_estimated_well(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ANALYZE artifact`` samples 300 rows per unit of its target (``ANALYSES``): with
    more artifacts than that sample, the logical keys' histogram has the target's buckets, ids and
    keys are still known to be all distinct, and each kind is estimated near its real count."""
    monkeypatch.setattr(bulk, "ANALYZE_AFTER_ROWS", 1)
    target = bulk.ANALYSES["artifact"].target
    assert target is not None
    counts = {"call_edge": 3000, "import_edge": 600}
    assert sum(counts.values()) > 300 * target
    edge = [Grounding(ALPHA.span_id, "m.py", "caller")]
    artifacts = [grounded(f"{kind}:{i}", edge, kind=kind) for kind, n in counts.items() for i in range(n)]
    with store.engine.begin() as conn:
        seed_commit(conn, SHA1, {"m.py": [ALPHA, BETA]})
        writes.insert_artifacts(conn, artifacts)
    with store.engine.connect() as conn:
        stats = {
            name: (distinct, bounds)
            for name, distinct, bounds in conn.execute(
                sa.text(
                    "SELECT attname, n_distinct, coalesce(array_length(histogram_bounds::text::text[], 1), 0)"
                    " FROM pg_stats WHERE tablename = 'artifact'"
                )
            )
        }
        estimates = {
            kind: _estimated_rows(conn, "SELECT * FROM artifact WHERE kind = %(p)s", kind) for kind in counts
        }
    assert stats["artifact_id"][0] == stats["logical_key"][0] == -1
    assert 0 < stats["logical_key"][1] <= target + 1
    assert all(0.75 * n <= estimates[kind] <= 1.25 * n for kind, n in counts.items()), estimates


def _estimated_rows(conn: sa.Connection, query: str, value: str) -> int:
    """The planner's row estimate for ``query`` with ``%(p)s`` bound to ``value``."""
    plan: Any = conn.exec_driver_sql("EXPLAIN (FORMAT JSON) " + query, {"p": value}).scalar()
    return int(plan[0]["Plan"]["Plan Rows"])


def _estimated_files(conn: sa.Connection, sha: str) -> int:
    return _estimated_rows(conn, "SELECT * FROM commit_file WHERE sha = %(p)s", sha)


def test_a_commits_files_are_known_to_the_planner_once_written(store: Store) -> None:
    """The statistics of the columns queries use, after each commit's files: the planner
    estimates a new commit's files from their real count, not as one row."""
    files = [(f"m{i}.py", sha_of(f"blob{i}")[:40], "regular", 10, f"m{i}", False) for i in range(40)]
    with store.engine.begin() as conn:
        for sha in (SHA1, SHA2):
            writes.upsert_commit(conn, sha=sha, tree_id=sha, parents=[], committed_at=COMMITTED_AT)
        writes.replace_commit_files(conn, SHA1, files)
    with store.engine.connect() as conn:
        analyzed = set(conn.scalars(sa.text("SELECT attname FROM pg_stats WHERE tablename = 'commit_file'")))
        assert set(writes.COMMIT_FILE_ANALYZED) <= analyzed
    with store.engine.begin() as conn:
        writes.replace_commit_files(conn, SHA2, files[:30])
    with store.engine.connect() as conn:
        assert _estimated_files(conn, SHA2) == 30
        assert _estimated_files(conn, SHA1) == 40


def test_a_commits_files_are_estimated_from_a_sample_once_the_table_outgrows_it(store: Store) -> None:
    """The commit files' analysis samples 300 rows per unit of ``COMMIT_FILE_STATISTICS``: once the
    table holds more rows than that, the newest commit's files are still estimated near their
    real count, as each earlier commit's are."""
    per_commit = 400
    shas = [sha_of(f"commit{n}") for n in range(12)]  # 4,800 rows against a 3,000-row sample
    files = [(f"m{i}.py", sha_of(f"blob{i}")[:40], "regular", 10, f"m{i}", False) for i in range(per_commit)]
    assert len(shas) * per_commit > 300 * writes.COMMIT_FILE_STATISTICS
    for sha in shas:
        with store.engine.begin() as conn:
            writes.upsert_commit(conn, sha=sha, tree_id=sha, parents=[], committed_at=COMMITTED_AT)
            writes.replace_commit_files(conn, sha, files)
    with store.engine.connect() as conn:
        estimates = [_estimated_files(conn, sha) for sha in shas]
    assert all(0.75 * per_commit <= e <= 1.25 * per_commit for e in estimates), estimates


def test_a_commits_occurrences_are_counted_per_file(store: Store) -> None:
    """Counted from each file's highest span ordinal, a commit's occurrences are as many as the
    located rows: files sharing a blob each count it, a file without spans counts nothing."""
    with store.engine.begin() as conn:
        seed_commit(conn, SHA1, {"a.py": [ALPHA, BETA], "b.py": [ALPHA], "empty.py": []})
        seed_commit(
            conn, SHA2, {"a.py": [ALPHA, BETA], "c.py": [ALPHA, BETA]}, blobs={"a.py": "x", "c.py": "x"}
        )
    with store.engine.connect() as conn:
        for sha, expected in ((SHA1, 3), (SHA2, 4), (sha_of("none"), 0)):
            located = occurrences(PARSER_VERSION)
            rows = conn.scalar(sa.select(sa.func.count()).select_from(located).where(located.c.sha == sha))
            assert reads.occurrence_count(conn, sha, PARSER_VERSION) == rows == expected
