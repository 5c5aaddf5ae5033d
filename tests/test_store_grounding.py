"""The >=1-grounding invariant, enforced twice: by the app before writing, by the database at COMMIT."""

from __future__ import annotations

import psycopg
import pytest
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from kb_assets.core.errors import GroundingError
from kb_assets.core.models import Artifact, Grounding, Method
from kb_resources.store import writes
from kb_resources.store.engine import Store
from kb_resources.store.schema import artifact, artifact_derived_from
from tests.storefixtures import RAW_ARTIFACT, grounded, seed_commit, sha_of, span

SHA = sha_of("c1")
ALPHA = span("alpha", 1, 3)
BETA = span("beta", 5, 9)


@pytest.fixture
def seeded(store: Store) -> Store:
    """A store with one commit whose file ``m.py`` holds spans alpha and beta."""
    with store.engine.begin() as conn:
        seed_commit(conn, SHA, {"m.py": [ALPHA, BETA]})
    return store


def _count(store: Store, table: sa.Table) -> int:
    with store.engine.connect() as conn:
        return int(conn.scalar(sa.select(sa.func.count()).select_from(table)) or 0)


def _grounding_violation(caught: pytest.ExceptionInfo[sa_exc.IntegrityError]) -> None:
    """Assert the failure is the grounding trigger's, recognisable by constraint name and message."""
    orig = caught.value.orig
    assert isinstance(orig, psycopg.errors.CheckViolation)
    assert orig.diag.constraint_name == "artifact_grounded_check"
    assert "artifact_grounded_check" in str(orig)


def test_app_refuses_an_ungrounded_artifact_and_writes_nothing(seeded: Store) -> None:
    """insert_artifacts raises GroundingError naming the bad artifact before any row is written,
    even for the well-grounded artifacts of the same batch."""
    good = grounded("call:good", [Grounding(ALPHA.span_id, "m.py", "caller")])
    bad = Artifact("a" * 64, "call_edge", "call:bad", "test", "1", Method.DETERMINISTIC, 1.0, {}, ())
    with seeded.engine.begin() as conn, pytest.raises(GroundingError) as caught:
        writes.insert_artifacts(conn, [good, bad])
    assert caught.value.logical_key == "call:bad"
    assert _count(seeded, artifact) == 0
    assert _count(seeded, artifact_derived_from) == 0


def test_database_refuses_an_ungrounded_artifact_at_commit(seeded: Store) -> None:
    """Bypassing the app, a raw INSERT of an artifact without grounding is accepted by the statement
    (the check is deferred) but the COMMIT fails with artifact_grounded_check, leaving no row."""
    aid = "b" * 64
    with seeded.engine.connect() as conn:
        conn.execute(RAW_ARTIFACT, {"aid": aid})
        with pytest.raises(sa_exc.IntegrityError) as caught:
            conn.commit()
    _grounding_violation(caught)
    assert aid in str(caught.value.orig)
    assert _count(seeded, artifact) == 0


def test_database_accepts_an_artifact_grounded_in_the_same_transaction(seeded: Store) -> None:
    """The deferred check sees the whole transaction: artifact first, grounding after, COMMIT passes."""
    aid = "c" * 64
    with seeded.engine.begin() as conn:
        conn.execute(RAW_ARTIFACT, {"aid": aid})
        conn.execute(
            sa.insert(artifact_derived_from).values(
                artifact_id=aid, span_id=ALPHA.span_id, path="m.py", role="r"
            )
        )
    assert _count(seeded, artifact) == 1


def test_deleting_the_last_grounding_row_fails_at_commit(seeded: Store) -> None:
    """Removing one of two grounding rows is fine; removing the last one of a surviving artifact
    fails at COMMIT (and rolls back); deleting the artifact itself (cascading its grounding) is fine."""
    item = grounded(
        "call:two", [Grounding(ALPHA.span_id, "m.py", "caller"), Grounding(BETA.span_id, "m.py", "callee")]
    )
    with seeded.engine.begin() as conn:
        writes.insert_artifacts(conn, [item])
    rows = artifact_derived_from.c
    with seeded.engine.begin() as conn:
        conn.execute(sa.delete(artifact_derived_from).where(rows.span_id == BETA.span_id))
    with seeded.engine.connect() as conn:
        conn.execute(sa.delete(artifact_derived_from).where(rows.artifact_id == item.artifact_id))
        with pytest.raises(sa_exc.IntegrityError) as caught:
            conn.commit()
    _grounding_violation(caught)
    assert _count(seeded, artifact_derived_from) == 1
    with seeded.engine.begin() as conn:
        conn.execute(sa.delete(artifact).where(artifact.c.artifact_id == item.artifact_id))
    assert _count(seeded, artifact) == _count(seeded, artifact_derived_from) == 0


RAW_ARTIFACTS = sa.text(
    "INSERT INTO artifact (artifact_id, kind, logical_key, extractor_id, extractor_version, method,"
    " confidence, payload) SELECT decode(id, 'hex'), 'call_edge', 'call:' || id, 'raw', '1', 'deterministic',"
    " 1, '{}' FROM unnest(CAST(:ids AS text[])) AS t(id)"
)


def _ground(conn: sa.Connection, ids: list[str]) -> None:
    conn.execute(
        sa.insert(artifact_derived_from),
        [{"artifact_id": aid, "span_id": ALPHA.span_id, "path": "m.py", "role": "r"} for aid in ids],
    )


def _due_rows(store: Store) -> int:
    with store.engine.connect() as conn:
        return int(conn.scalar(sa.text("SELECT count(*) FROM artifact_grounding_due")) or 0)


def test_one_ungrounded_artifact_among_a_statements_many_fails_the_commit(seeded: Store) -> None:
    """The check runs once per statement over every id it inserted (migration 0008): one artifact
    of a hundred left without grounding fails the COMMIT, named; the same statement with all
    hundred grounded commits, and leaves nothing pending behind."""
    ids = [f"{i:064x}" for i in range(1, 101)]
    with seeded.engine.connect() as conn:
        conn.execute(RAW_ARTIFACTS, {"ids": ids})
        _ground(conn, ids[:57] + ids[58:])
        with pytest.raises(sa_exc.IntegrityError) as caught:
            conn.commit()
    _grounding_violation(caught)
    assert ids[57] in str(caught.value.orig)
    assert _count(seeded, artifact) == 0
    with seeded.engine.begin() as conn:
        conn.execute(RAW_ARTIFACTS, {"ids": ids})
        _ground(conn, ids)
    assert _count(seeded, artifact) == 100
    assert _due_rows(seeded) == 0


def test_an_artifact_inserted_and_deleted_in_one_transaction_needs_no_grounding(seeded: Store) -> None:
    """Only artifacts that still exist at COMMIT are checked, as the per-row check did: one
    inserted without grounding and deleted again commits, and so does an insert that found every
    id stored already (``ON CONFLICT DO NOTHING``: no row inserted, nothing to check)."""
    aid = "d" * 64
    with seeded.engine.begin() as conn:
        conn.execute(RAW_ARTIFACT, {"aid": aid})
        conn.execute(sa.delete(artifact).where(artifact.c.artifact_id == aid))
    assert _count(seeded, artifact) == 0
    with seeded.engine.begin() as conn:
        conn.execute(RAW_ARTIFACT, {"aid": aid})
        _ground(conn, [aid])
    with seeded.engine.begin() as conn:
        conn.execute(sa.text(RAW_ARTIFACT.text + " ON CONFLICT DO NOTHING"), {"aid": aid})
    assert _count(seeded, artifact) == 1
    assert _due_rows(seeded) == 0


def test_the_check_can_still_be_made_immediate_by_name(seeded: Store) -> None:
    """``SET CONSTRAINTS artifact_grounded_check IMMEDIATE`` still reaches the insert check (now on
    the statement's row of ``artifact_grounding_due``): the statement itself fails."""
    with seeded.engine.connect() as conn:
        conn.execute(sa.text("SET CONSTRAINTS artifact_grounded_check IMMEDIATE"))
        with pytest.raises(sa_exc.IntegrityError) as caught:
            conn.execute(RAW_ARTIFACT, {"aid": "e" * 64})
        conn.rollback()
    _grounding_violation(caught)
