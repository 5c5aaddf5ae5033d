"""Database URLs: parsing what the user gave, masking passwords, and one-line failure reasons.

Everything that may end up in front of a person goes through ``mask`` or ``one_line`` first, so a
password never reaches a terminal or a log.
"""

from __future__ import annotations

import re

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from kb_assets.core.errors import StoreUnavailableError

STORE_DRIVER = "postgresql+psycopg"
DAGSTER_DRIVER = "postgresql+psycopg2"  # dagster-postgres fails under psycopg 3 (STACK.md)
_POSTGRES_SCHEMES = {"postgres", "postgresql", "postgresql+psycopg", "postgresql+psycopg2"}
_USERINFO = re.compile(r"(://[^:/@\s]*:)[^@\s]*@")
_MAX_REASON = 300


def mask(raw: str) -> str:
    """A URL string with its password replaced by ``***`` (works on strings that do not parse)."""
    return _USERINFO.sub(r"\1***@", raw)


def display(url: URL) -> str:
    """A URL for people: password masked."""
    return url.render_as_string(hide_password=True)


def one_line(error: BaseException, *secrets: str | None) -> str:
    """The first useful words of an error, on one line, with any secret blanked out."""
    cause = getattr(error, "orig", None) or error
    text = " ".join(str(cause).split()) or type(cause).__name__
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return mask(text)[:_MAX_REASON]


def parse_store_url(raw: str) -> URL:
    """Parse a user-given PostgreSQL URL and pin the psycopg 3 driver the store uses."""
    try:
        url = make_url(raw.strip())
    except ArgumentError:
        # Never echo a string that does not parse: there is no telling which part is a password.
        raise StoreUnavailableError(
            "the given database URL", "it does not parse as a URL; expected postgresql://USER@HOST/DB"
        ) from None
    if url.drivername not in _POSTGRES_SCHEMES:
        raise StoreUnavailableError(
            display(url),
            f"knowbase needs PostgreSQL, not {url.drivername}; expected postgresql://USER@HOST/DB",
        )
    if not url.database:
        raise StoreUnavailableError(
            display(url), "the URL names no database; expected postgresql://USER@HOST/DB"
        )
    return url.set(drivername=STORE_DRIVER)


def with_options(url: URL, *options: str) -> URL:
    """Append libpq ``-c`` options to the URL's ``options`` parameter (keeping any already there)."""
    current = url.query.get("options")
    given = current if isinstance(current, str) else " ".join(current or ())
    merged = " ".join(part for part in (given, *options) if part)
    return url.update_query_dict({"options": merged})


DAGSTER_SESSION_OPTION = "-csynchronous_commit=off"
"""Dagster's storage sessions do not wait for the WAL flush at each COMMIT. A run writes ~180
events, each its own transaction, and a flush costs ~3.5 ms on this kind of disk (0.3 ms without):
about a second of every index run. What a crash of the server's host can lose is the last events
of a run's log (the run then looks unfinished in ``kb ui``), never knowledge: the knowledge
store's own sessions keep synchronous commits."""


def dagster_url(url: URL, schema: str) -> str:
    """The psycopg2 URL dagster-postgres needs, confined to ``schema`` through ``search_path``."""
    dagster = url.set(drivername=DAGSTER_DRIVER)
    return with_options(dagster, f"-csearch_path={schema}", DAGSTER_SESSION_OPTION).render_as_string(
        hide_password=False
    )
