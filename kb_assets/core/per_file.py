"""Answers that depend on one file only, made once per file and remembered from one commit to
the next in a process that indexes commit after commit (``kb watch``).

Some of an extractor's work is a function of one file (its path, module name, spans and facts)
and of the commit's module map alone: a file's import edges, its call sites that can start a CLI
entry point. A watched commit changes a few files of thousands, and the loader shares the
others' spans and facts objects with the last commit (``indexing.load``), as ``map_modules``
shares the module map while no file is added or removed. ``PerFile`` hands back the last answer
for a file whose path, module, package flag, spans and facts are the very same objects under the
very same module map, and makes the others. Only the last program's answers are kept.

The work is often done in a forked copy of the process, which keeps nothing: the watch makes the
answers for the commit it just published while it waits (``remember``), so the next commit's
copies make only the changed files'.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from kb_assets.core.models import JSON
from kb_assets.core.modules import ModuleMap
from kb_assets.core.program import Program, SourceFile

T = TypeVar("T")

_every: list[PerFile[Any]] = []
"""Every ``PerFile`` made (module-level objects, one per kind of answer), for ``remember``."""


def remember(program: Program) -> None:
    """Make every kind of per-file answer for ``program`` now, so that forked copies made for a
    later program inherit them (a watch calls it while it waits for the next commit)."""
    for answers in _every:
        answers(program)


class PerFile(Generic[T]):
    """``make(source, facts, program)`` for each module file with ``facts_id`` facts, by path."""

    def __init__(self, facts_id: str, make: Callable[[SourceFile, JSON, Program], T]) -> None:
        self._facts_id = facts_id
        self._make = make
        self._module_map: ModuleMap | None = None
        self._known: dict[str, tuple[SourceFile, T]] = {}
        _every.append(self)

    def __call__(self, program: Program) -> dict[str, T]:
        """Each file's answer, by path, in path order: the last one for the same file under the
        same module map, else made now."""
        known = self._known if program.module_map is self._module_map else {}
        kept: dict[str, tuple[SourceFile, T]] = {}
        for source, facts in program.facts(self._facts_id):
            entry = known.get(source.path)
            if entry is None or not _same(entry[0], source):
                entry = (source, self._make(source, facts, program))
            kept[source.path] = entry
        self._module_map, self._known = program.module_map, kept
        return {path: answer for path, (_, answer) in kept.items()}


def _same(before: SourceFile, now: SourceFile) -> bool:
    """The same file as far as a per-file answer can tell: same name, same parsed objects."""
    return (
        before.facts is now.facts
        and before.spans is now.spans
        and before.module == now.module
        and before.is_package == now.is_package
    )
