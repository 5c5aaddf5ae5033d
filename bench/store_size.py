"""How much disk a repository's knowledge store takes, and how much of it is per-commit entries.

    python bench/store_size.py REPO

Sums ``pg_total_relation_size`` (rows, indexes, TOAST) over the store database's tables, and
separately over the tables that record which artifacts each commit holds: ``staged_part``,
``snapshot_part``, ``entry_set`` and ``entry_set_member`` since migration 0006, ``staged_entry``
and ``snapshot_entry`` before it (so ``bench/before_after.py`` can compare the two layouts). Run
after each measured index, the difference is what one commit costs the store. ``KB_HOME`` /
``KB_DB_URL`` as for ``kb``. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import sys

import sqlalchemy as sa

from kb_resources.git.repo import GitRepo
from kb_resources.settings import load_settings
from kb_resources.store.engine import open_store

ENTRY_TABLES = (
    "staged_entry",
    "snapshot_entry",
    "staged_part",
    "snapshot_part",
    "entry_set",
    "entry_set_member",
)

SIZES = sa.text(
    """
    SELECT c.relname, pg_total_relation_size(c.oid)
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE c.relkind = 'r' AND n.nspname = current_schema()
    """
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo")
    args = parser.parse_args()
    store = open_store(load_settings(), GitRepo.open(args.repo).key(), read_only=True, migrate=False)
    try:
        with store.engine.connect() as conn:
            sizes = {str(name): int(size) for name, size in conn.execute(SIZES)}
            commits = conn.scalar(sa.text("SELECT count(*) FROM commit_ref WHERE published_at IS NOT NULL"))
    finally:
        store.close()
    mib = 2**20
    entries = {name: sizes[name] for name in ENTRY_TABLES if name in sizes}
    listed = ", ".join(f"{name} {size / mib:.1f}" for name, size in entries.items())
    print(
        f"    store {sum(sizes.values()) / mib:.1f} MiB for {commits} published commits;"
        f" commit entries {sum(entries.values()) / mib:.1f} MiB ({listed})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
