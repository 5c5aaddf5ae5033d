"""The schema only changes through Alembic, matches the metadata, and is checked before use."""

from __future__ import annotations

import subprocess
import sys

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from kb_assets.core import ids
from kb_assets.core.errors import SchemaMismatchError
from kb_assets.core.models import Artifact, Grounding, Span
from kb_resources.store import revision
from kb_resources.store.engine import Store, create_store_engine, open_store
from kb_resources.store.hex_ids import stored_id
from kb_resources.store.schema import artifact, artifact_derived_from, blob_span, code_span, metadata
from kb_resources.store.session_locks import MIGRATION_LOCK_KEY
from kb_resources.store.target import parse_store_url
from tests.conftest import SettingsFactory
from tests.storefixtures import (
    RAW_ARTIFACT,
    contending_processes,
    grounded,
    publish,
    seed_commit,
    sha_of,
    span,
    table_dump,
)

MIGRATE_IN_SUBPROCESS = """
import sys
from pathlib import Path
from kb_resources.settings import Settings
from kb_resources.store.engine import open_store
kb_home = Path(sys.argv[2])
open_store(Settings(kb_home=kb_home, dagster_home=kb_home / "dagster", db_url=sys.argv[1]), "race").close()
"""


OPEN_AT_HEAD_IN_SUBPROCESS = """
import sys
from pathlib import Path
from kb_resources.settings import Settings
from kb_resources.store.engine import open_store
kb_home = Path(sys.argv[2])
for read_only in (False, True):
    settings = Settings(kb_home=kb_home, dagster_home=kb_home / "dagster", db_url=sys.argv[1])
    open_store(settings, "test", read_only=read_only).close()
print(sorted(m for m in sys.modules if m.split(".")[0] == "alembic"))
"""


def _tables(store: Store) -> set[str]:
    return set(sa.inspect(store.engine).get_table_names())


def test_fresh_database_migrates_to_head(store: Store) -> None:
    """open_store on an empty database creates every table, pgvector and the trigger, stamped at head."""
    with store.engine.connect() as conn:
        assert revision.current_revision(conn) == revision.head_revision() == "0010"
        assert revision.is_at_head(conn)
        assert conn.scalar(sa.text("SELECT extversion FROM pg_extension WHERE extname = 'vector'"))
        triggers = set(conn.scalars(sa.text("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal")))
    assert set(metadata.tables) <= _tables(store)
    assert {"artifact_grounded_check", "artifact_grounded_check_on_grounding"} <= triggers


def test_head_revision_is_the_migrations_head(store: Store) -> None:
    """``HEAD_REVISION``, which spares a store at head the import of Alembic, is the head Alembic
    reads from the migrations folder, and a known revision."""
    assert revision.scripts_head() == revision.HEAD_REVISION
    assert revision.HEAD_REVISION in revision.known_revisions()


def test_opening_a_store_at_head_does_not_import_alembic(
    store: Store, blank_database: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A process that opens a store already at head, for writing or read-only (the MCP server),
    never imports Alembic: the revision is one ``SELECT``."""
    kb_home = tmp_path_factory.mktemp("kb")
    run = subprocess.run(
        [sys.executable, "-c", OPEN_AT_HEAD_IN_SUBPROCESS, blank_database, str(kb_home)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert run.stdout.strip() == "[]", run.stderr


def test_migration_matches_schema_metadata(store: Store) -> None:
    """`alembic check` in code: autogenerate finds no difference between head and schema.py."""
    drifted = sa.MetaData()
    for table in metadata.tables.values():
        table.to_metadata(drifted)
    drifted.tables["gap"].append_column(sa.Column("added_later", sa.Text()))
    with store.engine.connect() as conn:
        context = MigrationContext.configure(
            conn, opts={"compare_type": True, "compare_server_default": True}
        )
        assert compare_metadata(context, metadata) == []
        assert [d[0] for d in compare_metadata(context, drifted)] == [
            "add_column"
        ]  # the check is not vacuous


def test_migrating_twice_is_a_noop(store: Store, settings_factory: SettingsFactory) -> None:
    """Migrating a database already at head changes nothing and raises nothing."""
    before = _tables(store)
    revision.migrate_to_head(store.engine)
    open_store(
        settings_factory(db_url=store.engine.url.render_as_string(hide_password=False)), "test"
    ).close()
    with store.engine.connect() as conn:
        assert conn.scalar(sa.text("SELECT count(*) FROM alembic_version")) == 1
        assert revision.is_at_head(conn)
    assert _tables(store) == before


def test_two_processes_migrating_at_once_both_succeed(
    blank_database: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Two processes that open the same empty database together both succeed; one migrates, one waits.

    The test holds the migration lock until both processes are queued on it, so they really contend.
    """
    homes = [tmp_path_factory.mktemp("kb") for _ in range(2)]
    assert contending_processes(blank_database, MIGRATION_LOCK_KEY, MIGRATE_IN_SUBPROCESS, homes) == [0, 0]
    engine = create_store_engine(parse_store_url(blank_database))
    with engine.connect() as conn:
        assert revision.is_at_head(conn)
    engine.dispose()


def test_database_from_a_newer_knowbase_is_refused(store: Store, settings_factory: SettingsFactory) -> None:
    """A database stamped with a revision we do not know raises SchemaMismatchError(newer=True)."""
    with store.engine.begin() as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '9999_from_the_future'"))
    url = store.engine.url.render_as_string(hide_password=False)
    for read_only in (False, True):
        with pytest.raises(SchemaMismatchError) as caught:
            open_store(settings_factory(db_url=url), "test", read_only=read_only)
        assert caught.value.newer is True
        assert caught.value.found == "9999_from_the_future"


def test_read_only_open_of_a_database_behind_head_refuses(
    blank_database: str, settings_factory: SettingsFactory
) -> None:
    """A read-only open (as kb serve does) never migrates: behind head is SchemaMismatchError(newer=False)."""
    with pytest.raises(SchemaMismatchError) as caught:
        open_store(settings_factory(db_url=blank_database), "test", read_only=True)
    assert caught.value.newer is False
    assert caught.value.found is None
    engine = create_store_engine(parse_store_url(blank_database))
    assert sa.inspect(engine).get_table_names() == []
    engine.dispose()


HEX_CASES = (
    "a" * 64,
    "0123456789abcdef" * 4,
    "A" * 64,
    "a" * 63,
    "a" * 63 + " ",
    "g" * 64,
    "a" * 32 + "-" * 32,
    "",
)
"""Span ids to store: valid, upper case, short, short but padded by CHAR(64), not hex, empty."""
INSERT_SPAN = "INSERT INTO code_span (span_id, lang, kind, fq_symbol_path) VALUES (:v, 'py', 'f', 'f')"


def _accepted_span_ids(store: Store) -> list[str]:
    """Which of ``HEX_CASES`` the ``code_span`` hex check lets in (each tried in a rolled-back savepoint)."""
    accepted = []
    with store.engine.connect() as conn:
        for value in HEX_CASES:
            nested = conn.begin_nested() if conn.in_transaction() else conn.begin()
            try:
                conn.execute(sa.text(INSERT_SPAN), {"v": value})
                accepted.append(value)
            except sa.exc.IntegrityError:
                pass
            nested.rollback()
    return accepted


def test_the_hex_checks_accept_the_same_ids_as_before_0005(store: Store) -> None:
    """Migration 0005 only makes the hex-id checks cheaper: at 0004 and at head exactly the two
    64-digit lowercase ids are accepted, and every check has the new form at head."""
    with store.engine.begin() as conn:
        command.downgrade(revision.alembic_config(conn), "0004")
    before = _accepted_span_ids(store)
    with store.engine.begin() as conn:
        command.upgrade(revision.alembic_config(conn), "0009")  # span ids are bytes from 0010 on
        definitions = conn.scalars(
            sa.text("SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname LIKE '%\\_hex'")
        ).all()
    assert before == _accepted_span_ids(store) == list(HEX_CASES[:2])
    assert len(definitions) == 9
    assert all("!~ '[^0-9a-f]'" in d and "length(" in d for d in definitions)


def _grounded_check_source(conn: sa.Connection) -> str:
    return str(conn.scalar(sa.text("SELECT prosrc FROM pg_proc WHERE proname = 'artifact_grounded_check'")))


def test_0007_only_reorders_the_grounding_checks_probes(store: Store) -> None:
    """At head the deferred check asks for a missing grounding row first (one probe for a grounded
    artifact); at 0006 it is 0001's function again; the rest of the function is unchanged."""
    with store.engine.begin() as conn:
        head = _grounded_check_source(conn)
        command.downgrade(revision.alembic_config(conn), "0006")
        before = _grounded_check_source(conn)
        command.upgrade(revision.alembic_config(conn), "0009")
        at_0009 = _grounded_check_source(conn)
        command.upgrade(revision.alembic_config(conn), "head")
        again = _grounded_check_source(conn)
    assert head == again
    ungrounded = head.index("NOT EXISTS (SELECT 1 FROM artifact_derived_from")
    assert ungrounded < head.index(" EXISTS (SELECT 1 FROM artifact WHERE")
    assert before.index("EXISTS (SELECT 1 FROM artifact WHERE") < before.index("NOT EXISTS")
    assert sorted(at_0009.split()) == sorted(before.split())


def _insert_checks(conn: sa.Connection) -> tuple[list[str], list[str]]:
    """(index definitions of ``artifact`` but its primary key, tables whose triggers are named
    ``artifact_grounded_check`` and fire on INSERT)."""
    indexes = conn.scalars(
        sa.text("SELECT indexdef FROM pg_indexes WHERE tablename = 'artifact' AND indexname <> 'pk_artifact'")
    ).all()
    tables = conn.scalars(
        sa.text(
            "SELECT tgrelid::regclass::text FROM pg_trigger WHERE tgname = 'artifact_grounded_check'"
            " AND tgtype & 4 = 4 ORDER BY 1"  # TRIGGER_TYPE_INSERT
        )
    ).all()
    return sorted(indexes), list(tables)


def test_0008_goes_back_to_the_per_artifact_check_and_forth(store: Store) -> None:
    """At 0007 logical keys have 0001's B-tree and inserts are checked per artifact; at head a hash
    index and the check of each statement's row of ``artifact_grounding_due``. Either way an
    ungrounded artifact fails its COMMIT under the constraint's name."""
    with store.engine.begin() as conn:
        head = _insert_checks(conn)
        command.downgrade(revision.alembic_config(conn), "0007")
        before = _insert_checks(conn)
    assert any("USING hash (logical_key)" in d for d in head[0])
    assert head[1] == ["artifact_grounding_due"]
    assert any("(kind, logical_key)" in d for d in before[0])
    assert not any("hash (logical" in d for d in before[0])
    assert before[1] == ["artifact"]
    hex_artifact = sa.text(
        RAW_ARTIFACT.text.replace("decode(:aid, 'hex')", ":aid")
    )  # ids as text before 0010
    for target, insert in (("0007", hex_artifact), ("head", RAW_ARTIFACT)):
        with store.engine.begin() as conn:
            command.upgrade(revision.alembic_config(conn), target)
        with store.engine.connect() as conn:
            conn.execute(insert, {"aid": "f" * 64})
            with pytest.raises(sa.exc.IntegrityError, match="artifact_grounded_check"):
                conn.commit()
    with store.engine.connect() as conn:
        assert _insert_checks(conn) == head


def _grounding_keys(conn: sa.Connection) -> tuple[list[str], list[str]]:
    """The constraints and index definitions of ``artifact_derived_from``."""
    constraints = conn.execute(
        sa.text(
            "SELECT conname FROM pg_constraint WHERE conrelid = 'artifact_derived_from'::regclass ORDER BY 1"
        )
    ).scalars()
    indexes = conn.execute(
        sa.text("SELECT indexdef FROM pg_indexes WHERE tablename = 'artifact_derived_from' ORDER BY 1")
    ).scalars()
    return list(constraints), list(indexes)


def _one_published_edge(conn: sa.Connection) -> tuple[Artifact, list[Span]]:
    """A commit with one file of two spans and one call edge between them, published."""
    sha, alpha, beta = sha_of("c1"), span("alpha", 1, 3), span("beta", 5, 9)
    edge = grounded(
        "call:a->b", [Grounding(alpha.span_id, "m.py", "caller"), Grounding(beta.span_id, "m.py", "callee")]
    )
    seed_commit(conn, sha, {"m.py": [alpha, beta]})
    publish(conn, sha, [edge])
    return edge, [alpha, beta]


def test_0009_trades_the_grounding_key_for_an_artifact_index_and_back(store: Store) -> None:
    """At head an artifact's grounding rows are found through a one-column ``artifact_id`` index
    and no key refuses a repeat; at 0008 the four-column primary key is back. The rows stay."""
    with store.engine.begin() as conn:
        _one_published_edge(conn)
        rows = table_dump(conn, artifact_derived_from)
        head = _grounding_keys(conn)
        command.downgrade(revision.alembic_config(conn), "0008")
        before = _grounding_keys(conn)
        as_text = conn.execute(sa.text("SELECT * FROM artifact_derived_from ORDER BY 1, 2, 3, 4")).all()
        assert [tuple(row) for row in as_text] == sorted(rows)  # ids are hex text before 0010
        command.upgrade(revision.alembic_config(conn), "head")
        assert _grounding_keys(conn) == head
        assert table_dump(conn, artifact_derived_from) == rows
    assert len(rows) == 2
    assert "pk_artifact_derived_from" not in head[0]
    assert any(d.endswith("USING btree (artifact_id)") for d in head[1])
    assert "pk_artifact_derived_from" in before[0]
    assert not any(d.endswith("USING btree (artifact_id)") for d in before[1])


ID_COLUMN_TYPES = sa.text(
    "SELECT c.table_name || '.' || c.column_name, c.data_type FROM information_schema.columns c"
    " JOIN information_schema.tables t ON t.table_name = c.table_name AND t.table_schema = c.table_schema"
    " WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'"
    " AND c.column_name IN ('span_id', 'artifact_id', 'set_id', 'chunk_id') ORDER BY 1"
)
"""The type of every id column of the store's tables, by ``table.column``."""


def _id_tables(conn: sa.Connection) -> dict[str, list[tuple[object, ...]]]:
    return {t.name: table_dump(conn, t) for t in (artifact, artifact_derived_from, code_span, blob_span)}


def test_0010_stores_ids_as_bytes_and_gives_back_the_same_hex(store: Store) -> None:
    """At head every id column is ``bytea`` (32 bytes a digest) and the knowledge reads back under
    the same hex ids; at 0009 the same rows hold them as ``char(64)`` text; up again, every row
    reads as before."""
    with store.engine.begin() as conn:
        edge, spans = _one_published_edge(conn)
        rows = _id_tables(conn)
        head: dict[str, str] = dict(conn.execute(ID_COLUMN_TYPES).all())
        widths = conn.scalars(
            sa.text("SELECT DISTINCT octet_length(span_id) FROM artifact_derived_from")
        ).all()
        command.downgrade(revision.alembic_config(conn), "0009")
        before: dict[str, str] = dict(conn.execute(ID_COLUMN_TYPES).all())
        as_text = conn.scalars(sa.text("SELECT span_id FROM artifact_derived_from ORDER BY 1")).all()
        command.upgrade(revision.alembic_config(conn), "head")
        assert _id_tables(conn) == rows
    assert len(head) == 11
    assert set(head.values()) == {"bytea"}
    assert before.keys() == head.keys()
    assert set(before.values()) == {"character"}
    assert widths == [32]
    assert as_text == sorted(s.span_id for s in spans)
    assert rows["artifact"][0][0] == edge.artifact_id


def test_0010_keeps_an_open_transactions_due_check_and_names_the_artifact_in_hex(store: Store) -> None:
    """An artifact inserted without grounding in the transaction that migrates down and up again
    stays due: its COMMIT fails, naming the artifact by its hex id."""
    aid = "0f" * 32
    with store.engine.connect() as conn:
        conn.execute(RAW_ARTIFACT, {"aid": aid})
        command.downgrade(revision.alembic_config(conn), "0009")
        command.upgrade(revision.alembic_config(conn), "head")
        with pytest.raises(
            sa.exc.IntegrityError, match=f"artifact_grounded_check: artifact {aid} has no row"
        ):
            conn.commit()


def test_stored_ids_are_whole_digests() -> None:
    """Only 64 lowercase hex digits become a stored id (``ids.digest_of``, the core's one definition):
    upper case, short, long, padded, newline-ended or non-hex text is refused before it reaches
    the store, where it would read back as another id."""
    assert ids.is_id("ab" * 32)
    assert stored_id("ab" * 32) == bytes([0xAB] * 32)
    mixed = "Ab" + "ab" * 31
    for bad in (
        "AB" * 32,
        mixed,
        "ab" * 31,
        "ab" * 33,
        " " + "ab" * 31 + "a",
        "ab" * 32 + "\n",
        "g" * 64,
        "",
    ):
        assert not ids.is_id(bad)
        assert ids.digest_of(bad) is None
        with pytest.raises(ValueError, match="not an id"):
            stored_id(bad)


def test_the_id_checks_refuse_anything_but_a_digest(store: Store) -> None:
    """``code_span``, ``artifact`` and ``rag_chunk`` hold an id to exactly 32 bytes."""
    insert = sa.text(
        "INSERT INTO code_span (span_id, lang, kind, fq_symbol_path) VALUES (:v, 'py', 'f', 'f')"
    )
    accepted = []
    with store.engine.connect() as conn:
        for value in (b"\x01" * 32, b"\x01" * 31, b"\x01" * 33, b""):
            nested = conn.begin_nested() if conn.in_transaction() else conn.begin()
            try:
                conn.execute(insert, {"v": value})
                accepted.append(len(value))
            except sa.exc.IntegrityError:
                pass
            nested.rollback()
    assert accepted == [32]
