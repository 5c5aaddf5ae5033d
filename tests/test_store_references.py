"""The statement-level references (migration 0003; since 0006 on the entry sets' members instead
of the per-commit entry tables) keep every guarantee of the foreign keys they replaced: no child
row without its parent, cascades and refusals on delete, no changed key, no truncated parent, and
parent rows locked against a concurrent delete."""

from __future__ import annotations

from collections.abc import Mapping

import psycopg
import pytest
import sqlalchemy as sa
from alembic import command
from sqlalchemy import exc as sa_exc

from kb_assets.core.models import Artifact, Grounding
from kb_resources.store import revision, writes
from kb_resources.store.bulk import copy_rows
from kb_resources.store.engine import Store
from kb_resources.store.schema import (
    STATEMENT_REFERENCES,
    StatementReference,
    artifact,
    artifact_derived_from,
    code_span,
    commit_ref,
    entry_set,
    entry_set_member,
    metadata,
    snapshot_entry,
    staged_entry,
)
from tests.storefixtures import PARSER_VERSION, grounded, publish, seed_commit, sha_of, span

SHA = sha_of("c1")
ALPHA = span("alpha", 1, 3)
BETA = span("beta", 5, 9)
UNUSED = span("unused", 11, 12)
EDGE = grounded("call:edge", [Grounding(ALPHA.span_id, "m.py", "caller")])


@pytest.fixture
def seeded(store: Store) -> Store:
    """Commit ``SHA`` with ``m.py`` (spans alpha, beta, unused) and one published artifact."""
    with store.engine.begin() as conn:
        seed_commit(conn, SHA, {"m.py": [ALPHA, BETA, UNUSED]})
        publish(conn, SHA, [EDGE])
    return store


OLD_REFERENCE_NAMES = {
    "fk_staged_entry_sha_commit_ref",
    "fk_staged_entry_artifact_id_artifact",
    "fk_snapshot_entry_sha_commit_ref",
    "fk_snapshot_entry_artifact_id_artifact",
    "fk_artifact_derived_from_artifact_id_artifact",
    "fk_artifact_derived_from_span_id_code_span",
    "fk_blob_span_span_id_code_span",
}
"""The foreign keys migration 0003 replaced (before 0006 the entries had tables of their own)."""

MEMBER_ARTIFACT = "fk_entry_set_member_artifact_id_artifact"


def _set_of(store: Store) -> str:
    """The id of the one set the seeded commit's entries are stored in."""
    with store.engine.connect() as conn:
        return str(conn.scalar(sa.select(entry_set.c.set_id)))


def _member(store: Store, artifact_id: str) -> dict[str, object]:
    """A member row adding ``artifact_id`` to the seeded set (valid as far as references go)."""
    return {"set_id": _set_of(store), "artifact_id": artifact_id}


def _valid_row(ref: StatementReference, item: Artifact, store: Store) -> dict[str, object]:
    """A row of ``ref.child`` whose every reference holds (inserting it succeeds)."""
    rows: Mapping[str, dict[str, object]] = {
        "entry_set_member": _member(store, item.artifact_id),
        "artifact_derived_from": {
            "artifact_id": item.artifact_id,
            "span_id": BETA.span_id,
            "path": "m.py",
            "role": "extra",
        },
        "blob_span": {
            "blob_id": sha_of("another blob"),
            "parser_version": PARSER_VERSION,
            "ordinal": 0,
            "span_id": BETA.span_id,
            "start_line": 1,
            "end_line": 2,
        },
    }
    return dict(rows[ref.child])


def _missing_key(ref: StatementReference) -> str:
    return "f" * (40 if ref.column == "sha" else 64)


def _violation(caught: pytest.ExceptionInfo[sa_exc.IntegrityError], name: str) -> psycopg.Error:
    orig = caught.value.orig
    assert isinstance(orig, psycopg.errors.ForeignKeyViolation)
    assert orig.diag.constraint_name == name
    return orig


def _count(store: Store, table: sa.Table) -> int:
    with store.engine.connect() as conn:
        return int(conn.scalar(sa.select(sa.func.count()).select_from(table)) or 0)


def test_the_references_are_triggers_not_foreign_keys(seeded: Store) -> None:
    """Each declared reference is enforced by triggers, and no row-level foreign key is left on it."""
    with seeded.engine.connect() as conn:
        fks = set(conn.scalars(sa.text("SELECT conname FROM pg_constraint WHERE contype = 'f'")))
        triggers = set(conn.scalars(sa.text("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal")))
    for ref in STATEMENT_REFERENCES:
        assert ref.name not in fks
        assert {f"kb_ref_{ref.child}_insert", f"kb_ref_{ref.child}_update"} <= triggers
        assert {f"kb_ref_parent_{ref.parent}_delete", f"kb_ref_parent_{ref.parent}_key"} <= triggers
    assert "fk_commit_file_sha_commit_ref" in fks  # the small tables keep their foreign keys


@pytest.mark.parametrize("ref", STATEMENT_REFERENCES, ids=lambda r: r.name)
def test_a_child_row_needs_its_parent(seeded: Store, ref: StatementReference) -> None:
    """A valid row is accepted; the same row naming a missing parent key is refused, by name."""
    other = grounded("call:other", [Grounding(BETA.span_id, "m.py", "caller")])
    with seeded.engine.begin() as conn:
        writes.insert_artifacts(conn, [other])
    table = metadata.tables[ref.child]
    row = _valid_row(ref, other, seeded)
    with seeded.engine.connect() as conn:
        conn.execute(sa.insert(table).values(row))
        conn.rollback()
        row[ref.column] = _missing_key(ref)
        with pytest.raises(sa_exc.IntegrityError) as caught:
            conn.execute(sa.insert(table).values(row))
    orig = _violation(caught, ref.name)
    assert _missing_key(ref) in str(orig.diag.message_detail)


def test_copy_checks_every_row_of_the_statement(seeded: Store) -> None:
    """Members by COPY: one unknown artifact among valid ones refuses the whole statement."""
    rows = [("a" * 64, EDGE.artifact_id), ("a" * 64, "e" * 64)]
    with seeded.engine.begin() as conn:
        conn.execute(sa.insert(entry_set).values(set_id="a" * 64, size=2))
    with seeded.engine.connect() as conn, pytest.raises(psycopg.errors.ForeignKeyViolation) as caught:
        copy_rows(conn, "entry_set_member", ("set_id", "artifact_id"), rows)  # the driver's error
    assert caught.value.diag.constraint_name == MEMBER_ARTIFACT
    assert _count(seeded, entry_set_member) == 1


def test_updating_a_child_to_a_missing_key_is_refused(seeded: Store) -> None:
    with seeded.engine.connect() as conn, pytest.raises(sa_exc.IntegrityError) as caught:
        conn.execute(sa.update(entry_set_member).values(artifact_id="d" * 64))
    _violation(caught, MEMBER_ARTIFACT)


def test_deleting_a_commit_cascades_to_its_entries(seeded: Store) -> None:
    """The commit's parts go with it; the sets stay (other commits may share them) until deleted,
    which takes their members along."""
    assert _count(seeded, staged_entry) == _count(seeded, snapshot_entry) == 1
    with seeded.engine.connect() as conn, pytest.raises(sa_exc.IntegrityError) as caught:
        conn.execute(sa.delete(entry_set))
    assert isinstance(caught.value.orig, psycopg.errors.ForeignKeyViolation)  # a part still names it
    with seeded.engine.begin() as conn:
        conn.execute(sa.delete(commit_ref).where(commit_ref.c.sha == SHA))
    assert _count(seeded, staged_entry) == _count(seeded, snapshot_entry) == 0
    assert _count(seeded, entry_set_member) == 1
    with seeded.engine.begin() as conn:
        conn.execute(sa.delete(entry_set))
    assert _count(seeded, entry_set_member) == 0


def test_an_artifact_in_a_snapshot_cannot_be_deleted(seeded: Store) -> None:
    with seeded.engine.connect() as conn, pytest.raises(sa_exc.IntegrityError) as caught:
        conn.execute(sa.delete(artifact).where(artifact.c.artifact_id == EDGE.artifact_id))
    orig = _violation(caught, MEMBER_ARTIFACT)
    assert EDGE.artifact_id in str(orig.diag.message_detail)
    assert _count(seeded, artifact) == 1


def test_deleting_an_unreferenced_artifact_deletes_its_grounding(seeded: Store) -> None:
    loose = grounded("call:loose", [Grounding(BETA.span_id, "m.py", "caller")])
    with seeded.engine.begin() as conn:
        writes.insert_artifacts(conn, [loose])
    assert _count(seeded, artifact_derived_from) == 2
    with seeded.engine.begin() as conn:
        conn.execute(sa.delete(artifact).where(artifact.c.artifact_id == loose.artifact_id))
    assert _count(seeded, artifact_derived_from) == 1


def test_a_grounding_span_cannot_be_deleted(seeded: Store) -> None:
    """ALPHA grounds an artifact and sits in a blob; UNUSED sits in the blob: both refuse."""
    for held, name in (
        (ALPHA, "fk_artifact_derived_from_span_id_code_span"),
        (UNUSED, "fk_blob_span_span_id_code_span"),
    ):
        with seeded.engine.connect() as conn, pytest.raises(sa_exc.IntegrityError) as caught:
            conn.execute(sa.delete(code_span).where(code_span.c.span_id == held.span_id))
        _violation(caught, name)


def test_a_referenced_key_cannot_change(seeded: Store) -> None:
    """Ids are content-addressed; an UPDATE of a referenced one is refused, other columns are free."""
    with seeded.engine.begin() as conn:
        conn.execute(sa.update(artifact).values(confidence=0.5))
    with seeded.engine.connect() as conn, pytest.raises(sa_exc.IntegrityError) as caught:
        conn.execute(sa.update(artifact).values(artifact_id="c" * 64))
    _violation(caught, MEMBER_ARTIFACT)


def test_a_parent_cannot_be_truncated_alone(seeded: Store) -> None:
    with seeded.engine.connect() as conn, pytest.raises(sa_exc.IntegrityError) as caught:
        conn.execute(sa.text("TRUNCATE artifact"))
    _violation(caught, MEMBER_ARTIFACT)
    with seeded.engine.begin() as conn:
        conn.execute(sa.text("TRUNCATE artifact, artifact_derived_from, entry_set_member"))
    assert _count(seeded, artifact) == 0


def test_a_staged_parent_is_locked_against_a_concurrent_delete(seeded: Store) -> None:
    """While a transaction stages an entry for an artifact, another one cannot delete that
    artifact: its check waits for the staging transaction to end, so no orphan can be committed."""
    loose = grounded("call:loose", [Grounding(BETA.span_id, "m.py", "caller")])
    with seeded.engine.begin() as conn:
        writes.insert_artifacts(conn, [loose])
    with seeded.engine.connect() as stager, seeded.engine.connect() as deleter:
        stager.execute(sa.insert(entry_set_member).values(_member(seeded, loose.artifact_id)))
        deleter.execute(sa.text("SET LOCAL lock_timeout = '300ms'"))
        with pytest.raises(sa_exc.OperationalError) as caught:
            deleter.execute(sa.delete(artifact).where(artifact.c.artifact_id == loose.artifact_id))
        assert isinstance(caught.value.orig, psycopg.errors.LockNotAvailable)
        deleter.rollback()
        stager.commit()
    assert _count(seeded, entry_set_member) == 2


def _foreign_keys(store: Store) -> set[str]:
    with store.engine.connect() as conn:
        return set(conn.scalars(sa.text("SELECT conname FROM pg_constraint WHERE contype = 'f'")))


def test_the_migration_goes_back_to_foreign_keys_and_forth(seeded: Store) -> None:
    """Downgrading a store with data restores (and validates) the foreign keys; upgrading again
    replaces them, and the checks work as before."""
    names = {ref.name for ref in STATEMENT_REFERENCES}
    with seeded.engine.begin() as conn:
        command.downgrade(revision.alembic_config(conn), "0002")
    assert _foreign_keys(seeded) >= OLD_REFERENCE_NAMES
    with seeded.engine.begin() as conn:
        command.upgrade(revision.alembic_config(conn), "head")
    assert not (names | OLD_REFERENCE_NAMES) & _foreign_keys(seeded)
    assert _count(seeded, snapshot_entry) == 1  # the entry went to a table and back into a set
    with seeded.engine.connect() as conn, pytest.raises(sa_exc.IntegrityError) as caught:
        conn.execute(sa.insert(entry_set_member).values(_member(seeded, "a" * 64)))
    _violation(caught, MEMBER_ARTIFACT)


def test_the_checks_go_back_to_per_row_probes_and_forth(seeded: Store) -> None:
    """Migration 0004 only changes how the checks probe (each distinct key once instead of each
    row): downgraded to 0003 and upgraded again, a missing parent is refused by name either way,
    and the grounded check on ``artifact`` watches every update again, then key changes only."""
    for target, grounded_on in (
        ("0003", "INSERT OR UPDATE ON"),
        ("head", "UPDATE OF artifact_id ON"),  # inserts: once per statement since 0008
    ):
        with seeded.engine.begin() as conn:
            (command.downgrade if target != "head" else command.upgrade)(
                revision.alembic_config(conn), target
            )
            definition = conn.scalar(
                sa.text(
                    "SELECT pg_get_triggerdef(oid) FROM pg_trigger"
                    " WHERE tgname = 'artifact_grounded_check' AND tgrelid = 'artifact'::regclass"
                )
            )
        assert f"AFTER {grounded_on} public.artifact" in str(definition)
        # at 0003 ids are hex text (bytes from 0010 on, which the metadata's columns convert to)
        name = "fk_snapshot_entry_artifact_id_artifact"
        insert: sa.Executable = sa.text(
            "INSERT INTO snapshot_entry (sha, artifact_id) VALUES (:sha, :artifact_id)"
        )
        row: dict[str, object] = {"sha": SHA, "artifact_id": "a" * 64}
        if target == "head":
            name, insert, row = MEMBER_ARTIFACT, sa.insert(entry_set_member), _member(seeded, "a" * 64)
        with seeded.engine.connect() as conn, pytest.raises(sa_exc.IntegrityError) as caught:
            conn.execute(insert, row)
        _violation(caught, name)


def test_a_writer_after_a_pending_delete_sees_the_parent_gone(seeded: Store) -> None:
    """The other order: a delete not yet committed keeps new child rows out until it ends; the
    writer then finds the parent gone and is refused, so again no orphan."""
    loose = grounded("call:loose", [Grounding(BETA.span_id, "m.py", "caller")])
    with seeded.engine.begin() as conn:
        writes.insert_artifacts(conn, [loose])
    entry = _member(seeded, loose.artifact_id)
    with seeded.engine.connect() as deleter, seeded.engine.connect() as stager:
        deleter.execute(sa.delete(artifact).where(artifact.c.artifact_id == loose.artifact_id))
        stager.execute(sa.text("SET LOCAL lock_timeout = '300ms'"))
        with pytest.raises(sa_exc.OperationalError) as waited:
            stager.execute(sa.insert(entry_set_member).values(entry))
        assert isinstance(waited.value.orig, psycopg.errors.LockNotAvailable)
        stager.rollback()
        deleter.commit()
        with pytest.raises(sa_exc.IntegrityError) as caught:
            stager.execute(sa.insert(entry_set_member).values(entry))
    _violation(caught, MEMBER_ARTIFACT)
