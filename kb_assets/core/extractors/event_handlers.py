"""Event handlers (``event_handler``): pydantic validators, FastAPI startup/shutdown/lifespan
handlers and SQLAlchemy event listeners, one artifact per handler with all its registrations.

Where the candidates come from: decorators of module-level functions and of methods of classes
outside functions are read from the shared ``symbols`` facts; decorated definitions inside function
bodies (models defined in tests, an app factory's ``@app.on_event``) and registration calls come
from this extractor's own facts (``event_facts``). Each candidate is recognized by resolving what
it names where it is written (``event_names``), never by spelling alone; the per-framework rules
and gaps are in ``event_pydantic``, ``event_fastapi`` and ``event_sqlalchemy``.

Payload (location-free): ``handler`` (dotted path; the external dotted name for a third-party
function passed to ``listen``) and ``registrations``, sorted, each ``{framework, event, target,
site}`` where ``site`` is ``decorator:<module>``, ``call:<module>`` or ``assignment:<module>``
(the module whose code registers). Grounding: the handler's definition (role ``handler``), each
first-party target's definition (``target``: the model class, the app variable's assignment, the
SQLAlchemy target class), every import hop followed to either (``import``), and the registration
site (``registration``): the decorated definition for decorators, the statement's span for
``app = FastAPI(...)``, else the innermost enclosing scope — the module for a module-level
``event.listen(...)``, the class for ``check = validator("a")(fn)`` — since call statements are
not spans. Lines are in the grounding entries.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from kb_assets.core.extractors.base import Draft, Extraction, LocatedGrounding
from kb_assets.core.extractors.event_context import EXTRACTOR_ID, Context, Found
from kb_assets.core.extractors.event_facts import collect_events
from kb_assets.core.extractors.event_fastapi import register_call, register_on_event
from kb_assets.core.extractors.event_names import Where, call_where
from kb_assets.core.extractors.event_pydantic import (
    VALIDATORS,
    is_validator,
    register_validator,
    register_validator_call,
)
from kb_assets.core.extractors.event_sqlalchemy import is_sqlalchemy, register_listen, register_listens_for
from kb_assets.core.models import JSON, Gap
from kb_assets.core.program import Program
from kb_assets.core.spans import ParsedSource
from kb_assets.core.symbols.facts import ModuleFacts
from kb_assets.core.symbols.table import symbol_table


@dataclass(frozen=True, slots=True)
class Decorated:
    """A decorated function: its span, the scope its decorators run in, its class (if a method)."""

    span: int
    where: Where
    decorators: tuple[Mapping[str, JSON], ...]
    owner: tuple[str, int] | None


class EventHandlersExtractor:
    """The ``event_handlers`` asset's extractor."""

    extractor_id = EXTRACTOR_ID
    version = "1"
    facts_version = "1"
    kind = "event_handler"
    asset_name = "event_handlers"
    description = (
        "Event handlers (pydantic validators, FastAPI lifecycle, SQLAlchemy listeners) and registrations."
    )

    def collect(self, source: ParsedSource) -> JSON:
        """Decorated definitions in function bodies and registration calls of one blob."""
        return collect_events(source)

    def resolve(self, program: Program) -> Extraction:
        """Every recognized registration of the commit, grouped by handler, plus gaps."""
        table = symbol_table(program)
        found: list[Found] = []
        gaps: list[Gap] = []
        for source in program.modules():
            facts = source.facts.get(EXTRACTOR_ID) or {}
            ctx = Context(table, source, facts.get("locals", {}))
            module_facts = table.facts.get(ctx.module)
            for site in _decorated(ctx, module_facts, facts.get("defs", [])):
                _read_decorators(ctx, site)
            for call in facts.get("calls", []):
                _read_call(ctx, call)
            found.extend(ctx.found)
            gaps.extend(ctx.gaps)
        return Extraction(drafts=_drafts(found), gaps=tuple(sorted(set(gaps), key=_gap_order)))

    def render(self, payload: Mapping[str, JSON], grounding: Sequence[LocatedGrounding]) -> dict[str, JSON]:
        """The payload as stored: registration sites are located by the ``registration`` grounding."""
        return dict(payload)


def _decorated(
    ctx: Context, module: ModuleFacts | None, defs: Sequence[Mapping[str, JSON]]
) -> Iterator[Decorated]:
    """Decorated functions of a module: from the ``symbols`` facts (their decorators run at import
    time, at the definition's line), then from function bodies."""
    if module is not None:
        for b in module.bindings:
            if b.kind == "function" and b.record.get("decorators"):
                yield Decorated(b.span, Where("", ctx.line(b.span)), tuple(b.record["decorators"]), None)
        for cls in module.classes.values():
            for b in cls.bindings:
                if b.kind == "function" and b.record.get("decorators"):
                    where = Where(cls.qualname, ctx.line(b.span))
                    yield Decorated(b.span, where, tuple(b.record["decorators"]), (cls.qualname, cls.span))
    for d in defs:
        owner = (str(d["owner"]), int(d["owner_span"])) if "owner" in d else None
        yield Decorated(int(d["span"]), Where(str(d["scope"])), tuple(d["decorators"]), owner)


def _read_decorators(ctx: Context, site: Decorated) -> None:
    """Recognize each decorator of one function and record its registration."""
    handler = ctx.names.definition(site.span)
    for decorator in site.decorators:
        kind = decorator.get("kind")
        callee = decorator.get({"call": "callee", "name": "dotted"}.get(str(kind), ""))
        if not isinstance(callee, str):
            continue
        receiver, _, last = callee.rpartition(".")
        if last in VALIDATORS:
            symbol = ctx.resolve(site.where, callee)
            if is_validator(symbol):
                line = ctx.line(site.span)
                register_validator(ctx, decorator, handler, site.owner, (site.span, "decorator", line))
        elif last == "listens_for" and kind == "call":
            if is_sqlalchemy(ctx.resolve(site.where, callee), "listens_for"):
                register_listens_for(ctx, decorator, handler, site.where)
        elif last == "on_event" and kind == "call" and receiver:
            register_on_event(ctx, decorator, receiver, handler, site.where)


def _read_call(ctx: Context, call: Mapping[str, JSON]) -> None:
    """Recognize one registration call and record it."""
    if call["form"] == "listen":
        if is_sqlalchemy(ctx.resolve(call_where(call), str(call["callee"])), "listen"):
            register_listen(ctx, call)
    elif call["form"] == "validator_call":
        register_validator_call(ctx, call)
    else:
        register_call(ctx, call)


def _drafts(found: Sequence[Found]) -> tuple[Draft, ...]:
    """One draft per handler: its registrations (sorted, distinct) and the union of their grounding."""
    by_handler: dict[str, list[Found]] = {}
    for f in found:
        by_handler.setdefault(f.handler, []).append(f)
    drafts = []
    for handler, items in sorted(by_handler.items()):
        registrations = sorted({f.registration for f in items})
        payload: dict[str, JSON] = {"handler": handler, "registrations": [r.as_json() for r in registrations]}
        grounding = tuple(sorted({g for f in items for g in f.grounding}))
        drafts.append(Draft("event_handler", f"event:{handler}", payload, grounding))
    return tuple(drafts)


def _gap_order(gap: Gap) -> tuple[str, int, str, str]:
    return (gap.path, gap.line or 0, gap.reason, gap.detail)
