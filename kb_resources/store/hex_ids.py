"""Ids stored as their 32 bytes, read and written as the 64 lowercase hex digits everyone else uses.

Every span, artifact, entry-set and chunk id is a sha256 digest. Knowbase's code, its exports and
its MCP answers spell one as 64 hex characters; the store keeps the digest itself (``bytea``,
migration 0010): half the width in every row and index entry that holds one, which is most of
what the grounding rows, the entry-set members and their indexes are made of, and a comparison
of 32 bytes instead of 64 characters in every join and check. The conversion happens at the
store's edge and nowhere else: ``HexId`` for statements built on ``schema``'s columns,
``stored_id`` / ``stored_rows`` for rows sent by ``COPY`` (``bulk``) and text statements.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import BYTEA

from kb_assets.core.ids import digest_of

ID_BYTES = 32
"""The length of every stored id (a sha256 digest); the tables' checks hold them to it."""


def stored_id(spelled: str) -> bytes:
    """The bytes the store keeps for the id ``spelled`` in hex; ``ValueError`` for anything that
    is not an id (``ids.digest_of``: ``bytes.fromhex`` alone would take upper case and spaces, and
    read them back as another spelling of the id)."""
    digest = digest_of(spelled)
    if digest is None:
        raise ValueError(f"not an id (64 lowercase hex digits): {str(spelled)[:80]!r}")
    return digest


def hex_id(stored: bytes | memoryview) -> str:
    """The 64 hex digits of a stored id."""
    return stored.hex()


def stored_rows(rows: Iterable[Sequence[object]], positions: Sequence[int]) -> Iterator[Sequence[object]]:
    """``rows`` with the hex ids at ``positions`` (the columns the schema stores as digests)
    turned into the bytes the store keeps (``COPY`` sends them as they are).

    Each distinct id is converted once per call: the rows of a load name few ids many times (a
    batch of Django's grounding rows names each span ~9 times, each artifact ~4 times), and a
    look-up costs a third of a checked conversion (0.048 against 0.14 s for 300k such rows)."""
    if not positions:
        yield from rows
        return
    done: dict[object, object] = {None: None}
    for row in rows:
        out = list(row)
        for i in positions:
            value = out[i]
            try:
                out[i] = done[value]
            except KeyError:
                out[i] = done[value] = stored_id(value)  # type: ignore[arg-type]  # an id column's value
        yield out


_HEX: sa.ColumnElement[Any] = sa.literal_column("'hex'")


class HexId(sa.types.TypeDecorator[str]):
    """A digest column: ``bytea`` in the store, its hex spelling in Python (bind parameters and
    results of statements built on the column, arrays of it included).

    A statement's result columns of this type are spelled in hex by the server (``encode(id,
    'hex')``, ``column_expression``; SQLAlchemy applies it to the outermost columns only, so joins,
    subqueries and ``INSERT ... SELECT`` keep the bytes): Django's 334k grounding rows read in
    0.35-0.37 s of client CPU that way, against 0.66-0.82 s converted in Python and 0.44-0.48 s
    as raw bytes. Only text statements typed with it (``.columns(...)``) get bytes, converted in
    ``process_result_value``."""

    impl = BYTEA
    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: sa.Dialect) -> bytes | None:
        """The stored bytes of a hex id given as a parameter."""
        return None if value is None else stored_id(value)

    def process_result_value(self, value: Any, dialect: sa.Dialect) -> str | None:
        """The hex spelling of a stored id read back as bytes (a typed text statement's column)."""
        return None if value is None else hex_id(value)

    def column_expression(self, colexpr: sa.ColumnElement[Any]) -> sa.ColumnElement[str]:
        """The id as the server spells it in hex, for a result column."""
        return sa.func.encode(colexpr, _HEX, type_=sa.Text())
