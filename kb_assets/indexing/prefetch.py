"""Work of later steps done ahead, in a forked copy, while a run's longest step keeps one core busy.

A run executes its steps one after the other in one process, so on a one-file commit the second
core idles through the call-edge step (~1 s on Django) while the steps after it (entities, import
edges, public API: ~0.5 s between them) wait their turn, although they need nothing the call
graph makes. ``start`` hands their work to a copy of the process (``kb_assets.core.forked``: it
shares the loaded program copy-on-write), which does it in their steps' order and hands each
result back as soon as it has it (``forked.fork_each``); the step that needs a result ``take``s it,
waiting for the copy if it is not there yet. The copy writes what it builds to the store over its
own connection (artifacts are content-addressed: a second writer of the same row is a no-op), and
returns only what the steps stage: each step still stages its own ids and gaps, in its own order,
so Dagster sees each asset's materialization from its own step.

Only a run that executes every step in this process asks for it (``prefetching``: ``kb index``,
``kb watch``); a step process of a multiprocess run would leave the results to nobody. A copy
that fails, dies or cannot be made leaves nothing to take (but what it handed back before), and
the steps do their own work, as they do for any program, store or extractor object other than
the ones the copy was started for. A result not taken when the run ends is dropped, its copy
stopped and reaped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial

import sqlalchemy as sa

from kb_assets.core import forked
from kb_assets.core.artifact_memo import Lesson
from kb_assets.core.extractors.api_routes import ApiRoutesExtractor
from kb_assets.core.extractors.base import Extractor
from kb_assets.core.extractors.calls import CallsExtractor
from kb_assets.core.extractors.entities import EntitiesExtractor
from kb_assets.core.extractors.event_handlers import EventHandlersExtractor
from kb_assets.core.extractors.imports import ImportsExtractor
from kb_assets.core.extractors.process_paths import ProcessPathsExtractor
from kb_assets.core.extractors.public_api import PublicApiExtractor
from kb_assets.core.extractors.registry import extractor as registered
from kb_assets.core.models import Gap
from kb_assets.core.program import Program
from kb_resources.store.engine import create_store_engine

AHEAD_OF = CallsExtractor.extractor_id
"""The extractor whose step starts the work of later ones in forked copies: the run's longest
step, during which this process keeps one core busy when its edges are mostly carried from an
earlier commit (its carry remembers one) and its graph is built from earlier resolutions
(``Carried.resolved``): then ``AHEAD`` and ``AFTER_GRAPH``. A full build keeps both cores busy
on its own while it resolves the graph (in two copies) and stores the edges (by two writers):
copies started at its beginning only cost CPU (a full Django index: ~2.5 s more, in the same wall
time). But once the edges are stored, what is left of the step (the staging of 76k ids, the
statistics: ~1.2 s on Django) mostly waits for the server, and the steps after it took ~1.7 s on
one core: then ``AFTER_WRITES``."""

AHEAD = (
    ApiRoutesExtractor.extractor_id,
    EntitiesExtractor.extractor_id,
    ImportsExtractor.extractor_id,
    PublicApiExtractor.extractor_id,
)
"""The extractors done ahead while ``AHEAD_OF``'s step runs: they read no other asset, and their
steps come after it (``AHEAD_OF_PRIORITY``). The process paths' copy resolves the routes again
for their entry points (~0.04 s on Django, on the other core)."""

AHEAD_OF_PRIORITY = 1
"""Dagster's ``dagster/priority`` of ``AHEAD_OF``'s step: among the steps ready to run it goes
first (the rest keep their order), so that the others' work is done ahead of them."""


def step_tags(extractor_id: str) -> dict[str, str]:
    """The Dagster tags of an extractor's step: ``AHEAD_OF``'s runs before the steps whose work
    it starts (``AHEAD_OF_PRIORITY``)."""
    return {"dagster/priority": str(AHEAD_OF_PRIORITY)} if extractor_id == AHEAD_OF else {}


AFTER_GRAPH = (EventHandlersExtractor.extractor_id, ProcessPathsExtractor.extractor_id)
"""The extractors done ahead once ``AHEAD_OF``'s step has built the call graph the process paths
search (the copy shares it), while the rest of that step and the steps between run here: the
event handlers first, so that the paths' entry points take the copy's resolution of them
(``resolve_shared``)."""

AFTER_WRITES = (
    ApiRoutesExtractor.extractor_id,
    EntitiesExtractor.extractor_id,
    EventHandlersExtractor.extractor_id,
    ImportsExtractor.extractor_id,
    PublicApiExtractor.extractor_id,
    ProcessPathsExtractor.extractor_id,
)
"""Every extractor after ``AHEAD_OF``, in their steps' order, done by one copy once a full build
has stored its call edges (``AHEAD_OF``)."""


@dataclass(frozen=True, slots=True)
class Done:
    """One extractor's work, done: the ids of its artifacts (stored) in draft order, its gaps, the
    rows it loaded per table (for the step's one statistics refresh), and what its build taught
    the extractor's artifact memo (``artifact_memos``; None without one)."""

    ids: tuple[str, ...]
    gaps: tuple[Gap, ...]
    loaded: Counter[str]
    lesson: Lesson | None = None


Work = Callable[[sa.Engine, Program, Extractor], Done]
"""One extractor's work on a program, given an engine on the store (the copy's own)."""


@dataclass(slots=True)
class _Started:
    """A copy at work, what it was started for, and which of its results were taken."""

    url: sa.URL
    program: Program
    extractors: tuple[Extractor, ...]
    copy: forked.Streamed[str, Done]
    taken: set[str] = field(default_factory=set)

    def doing(self, url: sa.URL, program: Program, extractors: tuple[Extractor, ...]) -> bool:
        """Whether this copy does the work of ``extractors`` on ``program`` in the store at ``url``
        and none of its results was taken yet."""
        same = self.program is program and self.url == url and self.extractors == extractors
        return same and not self.taken

    def made_for(self, url: sa.URL, program: Program, extractor: Extractor) -> bool:
        """Whether this copy works for ``extractor`` (that very object) on ``program`` in the
        store at ``url``, and its result for it was not taken yet."""
        return (
            self.program is program
            and self.url == url
            and any(ex is extractor for ex in self.extractors)
            and extractor.extractor_id not in self.taken
        )


_active = False
"""Whether ``prefetching`` is active (the run executes every step in this process)."""
_started: list[_Started] = []
"""The copies started for the program of the run in progress, oldest first."""


@contextmanager
def prefetching() -> Iterator[None]:
    """Within: ``start`` may hand work to a copy; on the way out, whatever was not taken is
    dropped and its copy stopped."""
    global _active  # noqa: PLW0603 - a process-wide setting, like ``kept_resolutions``
    previous, _active = _active, True
    try:
        yield
    finally:
        _active = previous
        discard()


def start(url: sa.URL, program: Program, extractor_ids: Sequence[str], work: Work) -> bool:
    """Begin ``work`` for each registered extractor named in ``extractor_ids`` on ``program`` in a
    copy (copies started for another program are dropped first); True when such a copy was
    started, now or before for this very program, store and extractors with none of its results
    taken yet (a watch starts it once the commit is parsed, and the call-edge step then asks
    again: ``_Started.doing``); False when none was (not ``prefetching``, nothing to do, or
    ``forked.can_fork`` allowed no copy)."""
    if any(started.program is not program for started in _started):
        discard()
    if not _active or not extractor_ids:
        return False
    extractors = tuple(registered(i) for i in extractor_ids)
    if any(started.doing(url, program, extractors) for started in _started):
        return True
    copy = forked.fork_each(partial(_ahead, url, program, extractors, work))
    if copy is None:
        return False
    _started.append(_Started(url, program, extractors, copy))
    return True


def active() -> bool:
    """Whether ``prefetching`` is active: ``start`` may hand work to a copy."""
    return _active


def take(url: sa.URL, program: Program, extractor: Extractor) -> Done | None:
    """A copy's result for ``extractor`` on ``program`` in the store at ``url`` (each handed out
    once), waiting for the copy if it has not finished; None when there is none to take."""
    started = next((s for s in _started if s.made_for(url, program, extractor)), None)
    if started is None:
        return None
    started.taken.add(extractor.extractor_id)
    return started.copy.get(extractor.extractor_id)


def discard() -> None:
    """Drop the copies' results, stopping and reaping any that still runs."""
    while _started:
        _started.pop().copy.stop()


def _ahead(
    url: sa.URL, program: Program, extractors: tuple[Extractor, ...], work: Work
) -> Iterator[tuple[str, Done]]:
    """In the copy: each extractor's work in turn, over a connection of the copy's own."""
    engine = create_store_engine(url)
    try:
        for ex in extractors:
            yield ex.extractor_id, work(engine, program, ex)
    finally:
        engine.dispose()
