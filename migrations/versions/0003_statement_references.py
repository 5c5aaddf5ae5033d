"""The busiest references are checked once per statement instead of once per row.

A foreign key in PostgreSQL runs one index probe per inserted row, through the executor's trigger
machinery: indexing Django wrote 320k grounding rows (two keys each), 88k staged and 88k snapshot
entries per commit, and those probes were most of the server time (about 5.5 s of a full index,
1.3 s of each one-file commit's staging). The same guarantees are kept by statement-level triggers
that check a whole statement's rows with one join (``REFERENCING NEW TABLE``):

- child side: after an INSERT or UPDATE of the child, every referenced key must exist;
- parent side: after a DELETE, ``cascade`` references delete the children, the others refuse while
  a child refers to a deleted key; an UPDATE may not change a referenced key; a TRUNCATE refuses
  while a child table still has rows (TRUNCATE of parent and child together is fine).

Concurrency is settled on the rare side. A foreign key locks each parent row ``FOR KEY SHARE`` as a
child is written (a WAL record per row); here a parent-side check first takes the child tables in
``SHARE ROW EXCLUSIVE`` mode, which waits for every transaction writing children and keeps new
ones out until it ends. So a delete sees the children of any writer that committed before it, and
a writer that started after the delete sees the parent gone (under READ COMMITTED, which the store
uses: each statement of the check reads a fresh snapshot).

Violations raise ``foreign_key_violation`` (SQLSTATE 23503) with the reference's name as the
constraint name, like the foreign keys they replace. Checks run at the end of each statement, so
an artifact must still be inserted before its grounding rows, which is the order the store writes.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


class Reference(NamedTuple):
    """``child.column`` refers to ``parent.column`` (the parent's primary key).

    A NamedTuple, not a dataclass: Alembic loads a migration without registering its module, which
    the dataclass machinery needs to read postponed annotations."""

    child: str
    column: str
    parent: str
    cascade: bool = False
    deferred: bool = False
    """Only for the downgrade: how the foreign key being replaced was declared."""

    @property
    def name(self) -> str:
        """The replaced foreign key's name, kept as the reference's constraint name."""
        return f"fk_{self.child}_{self.column}_{self.parent}"


REFERENCES = (
    Reference("staged_entry", "sha", "commit_ref", cascade=True),
    Reference("staged_entry", "artifact_id", "artifact"),
    Reference("snapshot_entry", "sha", "commit_ref", cascade=True),
    Reference("snapshot_entry", "artifact_id", "artifact"),
    Reference("artifact_derived_from", "artifact_id", "artifact", cascade=True, deferred=True),
    Reference("artifact_derived_from", "span_id", "code_span"),
    Reference("blob_span", "span_id", "code_span"),
)


def _ordered(names: Sequence[str]) -> list[str]:
    return sorted(set(names))


def _child_check(ref: Reference) -> str:
    return f"""
    SELECT n.{ref.column} INTO missing FROM new_rows n
     WHERE NOT EXISTS (SELECT 1 FROM {ref.parent} p WHERE p.{ref.column} = n.{ref.column}) LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'insert or update on table "{ref.child}" violates reference "{ref.name}"'
            USING ERRCODE = 'foreign_key_violation', CONSTRAINT = '{ref.name}', TABLE = '{ref.child}',
                  DETAIL = format('Key ({ref.column})=(%s) is not present in table "{ref.parent}".', missing);
    END IF;"""


def _refused(ref: Reference, action: str, rows: str) -> str:
    return f"""
        SELECT c.{ref.column} INTO missing FROM {ref.child} c JOIN {rows} ON c.{ref.column} = o.{ref.column}
         LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION '{action} on table "{ref.parent}" violates reference "{ref.name}"'
                USING ERRCODE = 'foreign_key_violation', CONSTRAINT = '{ref.name}', TABLE = '{ref.child}',
                      DETAIL = format('Key ({ref.column})=(%s) is still referenced from table "%s".',
                                      missing, '{ref.child}');
        END IF;"""


def _parent_delete(ref: Reference) -> str:
    if ref.cascade:
        return f"""
        DELETE FROM {ref.child} c USING old_rows o WHERE c.{ref.column} = o.{ref.column};"""
    return _refused(ref, "delete", "old_rows o")


def _parent_update(ref: Reference) -> str:
    return _refused(ref, "update", f"(SELECT OLD.{ref.column} AS {ref.column}) o")


def _parent_truncate(ref: Reference) -> str:
    return f"""
        IF EXISTS (SELECT 1 FROM {ref.child}) THEN
            RAISE EXCEPTION 'cannot truncate table "{ref.parent}": "{ref.child}" refers to it'
                USING ERRCODE = 'foreign_key_violation', CONSTRAINT = '{ref.name}', TABLE = '{ref.child}',
                      HINT = 'Truncate table "{ref.child}" at the same time.';
        END IF;"""


def _function(name: str, body: str) -> str:
    return f"""
CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    missing text;
BEGIN{body}
    RETURN NULL;
END
$$"""


def _child_statements(child: str) -> list[str]:
    refs = [r for r in REFERENCES if r.child == child]
    function = f"kb_ref_{child}"
    body = "".join(_child_check(r) for r in refs)
    return [
        _function(function, body),
        f"""CREATE TRIGGER {function}_insert AFTER INSERT ON {child} REFERENCING NEW TABLE AS new_rows
            FOR EACH STATEMENT EXECUTE FUNCTION {function}()""",
        f"""CREATE TRIGGER {function}_update AFTER UPDATE ON {child} REFERENCING NEW TABLE AS new_rows
            FOR EACH STATEMENT EXECUTE FUNCTION {function}()""",
    ]


def _lock_children(refs: Sequence[Reference]) -> str:
    return "".join(
        f"""
    LOCK TABLE {child} IN SHARE ROW EXCLUSIVE MODE;"""
        for child in _ordered([r.child for r in refs])
    )


def _parent_statements(parent: str) -> list[str]:
    refs = [r for r in REFERENCES if r.parent == parent]
    column = refs[0].column
    function = f"kb_ref_parent_{parent}"
    # Cascades first: a child row deleted with its parent no longer blocks the delete.
    deletes = sorted(refs, key=lambda r: not r.cascade)
    body = f"""{_lock_children(refs)}
    IF TG_OP = 'DELETE' THEN{"".join(_parent_delete(r) for r in deletes)}
    ELSE{"".join(_parent_truncate(r) for r in refs)}
    END IF;"""
    # A key update is row-level: transition tables would copy every updated row (``kb embed``
    # updates the embedding of every artifact), and ids are content-addressed, so never updated.
    key_body = _lock_children(refs) + "".join(_parent_update(r) for r in refs)
    return [
        _function(function, body),
        _function(f"{function}_key", key_body),
        f"""CREATE TRIGGER {function}_delete AFTER DELETE ON {parent} REFERENCING OLD TABLE AS old_rows
            FOR EACH STATEMENT EXECUTE FUNCTION {function}()""",
        f"""CREATE TRIGGER {function}_truncate AFTER TRUNCATE ON {parent}
            FOR EACH STATEMENT EXECUTE FUNCTION {function}()""",
        f"""CREATE TRIGGER {function}_key AFTER UPDATE OF {column} ON {parent} FOR EACH ROW
            WHEN (OLD.{column} IS DISTINCT FROM NEW.{column}) EXECUTE FUNCTION {function}_key()""",
    ]


def _drop_foreign_keys() -> list[str]:
    return [f"ALTER TABLE {ref.child} DROP CONSTRAINT IF EXISTS {ref.name}" for ref in REFERENCES]


def _drop_functions() -> list[str]:
    children = [f"kb_ref_{child}" for child in _ordered([r.child for r in REFERENCES])]
    parents = [f"kb_ref_parent_{parent}" for parent in _ordered([r.parent for r in REFERENCES])]
    names = [*children, *parents, *(f"{name}_key" for name in parents)]
    return [f"DROP FUNCTION IF EXISTS {name}() CASCADE" for name in names]


def _install() -> list[str]:
    statements = _drop_foreign_keys()
    for child in _ordered([r.child for r in REFERENCES]):
        statements += _child_statements(child)
    for parent in _ordered([r.parent for r in REFERENCES]):
        statements += _parent_statements(parent)
    return statements


def upgrade() -> None:
    """Drop the row-level foreign keys and install the statement-level checks that replace them.

    Every statement is generated from the constant ``REFERENCES`` above (no outside input)."""
    for statement in _install():
        op.execute(statement)


def downgrade() -> None:
    """Back to row-level foreign keys (validated against the rows already stored)."""
    for statement in _drop_functions():  # CASCADE drops their triggers
        op.execute(statement)
    for ref in REFERENCES:
        op.create_foreign_key(
            ref.name,
            ref.child,
            ref.parent,
            [ref.column],
            [ref.column],
            ondelete="CASCADE" if ref.cascade else None,
            deferrable=True if ref.deferred else None,
            initially="DEFERRED" if ref.deferred else None,
        )
