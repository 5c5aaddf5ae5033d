"""``kb migrate``: create the store if needed and bring its schema to head."""

from __future__ import annotations

import argparse

from kb_assets.cli.session import open_session
from kb_resources.store.revision import current_revision


def add_migrate_arguments(p: argparse.ArgumentParser) -> None:
    """``kb migrate`` takes only the common flags."""


def run_migrate(args: argparse.Namespace) -> int:
    """Migrate and report where the schema is."""
    session = open_session(args)
    with session.store.engine.connect() as conn:
        revision = current_revision(conn)
    print(f"store {session.store.url} is at schema revision {revision}")
    return 0
