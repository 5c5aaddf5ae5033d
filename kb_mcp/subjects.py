"""What a unit is about, read from its logical key and payload, and where its home is.

Subjects are the dotted paths a unit names: both ends of ``import:A->B`` or ``call:A->B``, the
public name and target of ``public:PKG.NAME``, a route's handler, an entity and the entities it
references, a process path's chain. The *primary* subject is the left end of the key (the importer,
the caller, the public name, the entity, the entry point): the unit belongs to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SUBJECT_FIELDS = (
    "importer",
    "imported",
    "target",
    "handler",
    "name",
    "caller",
    "callee",
    "entrypoint",
    "sink",
)
SUBJECT_LISTS = ("chain", "references")
TEST_DIRS = ("tests", "test", "testing")


def subjects_of(logical_key: str, payload: Mapping[str, Any]) -> tuple[tuple[str, ...], str | None]:
    """The dotted paths a unit is about (sorted) and its primary subject."""
    found: set[str] = set()
    primary: str | None = None
    _, _, rest = logical_key.partition(":")
    if rest and " " not in rest:
        ends = [part for part in rest.split("->") if part]
        found.update(ends)
        primary = ends[0] if ends else None
    for name in SUBJECT_FIELDS:
        value = payload.get(name)
        if isinstance(value, str) and "." in value:
            found.add(value)
            primary = primary or value
    for name in SUBJECT_LISTS:
        values = payload.get(name)
        if isinstance(values, list):
            found.update(v for v in values if isinstance(v, str))
    return tuple(sorted(found)), primary


def is_test_path(path: str) -> bool:
    """Whether a repository file is test code (a tests/ folder, test_*.py, *_test.py, conftest.py)."""
    parts = path.split("/")
    name = parts[-1]
    return (
        any(part in TEST_DIRS for part in parts[:-1])
        or name.startswith("test_")
        or name.endswith("_test.py")
        or name == "conftest.py"
    )
