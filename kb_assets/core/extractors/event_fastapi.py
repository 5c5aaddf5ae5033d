"""FastAPI startup/shutdown/lifespan handlers.

Forms: ``@app.on_event("startup")``, ``app.add_event_handler("shutdown", fn)``,
``FastAPI(lifespan=fn, on_startup=[f, g], on_shutdown=[h])`` and ``app.router.lifespan_context =
fn``. ``app`` must resolve (module names through the symbol table, a factory's locals through
``event_context``) to a variable assigned a ``fastapi.FastAPI``/``APIRouter`` call — or a call of
a first-party subclass of one — or annotated with one of those classes. The target is that
variable's dotted path (``app.main.app``, ``app.main.create_app.app`` for a factory's local), grounded
on its assignment (a factory's local: on the factory). The event is ``startup``/``shutdown``/
``lifespan``. An ``on_event``/``add_event_handler`` for ``startup``/``shutdown`` on something that is
not a resolvable app is an ``unresolved_app`` gap (other event names are someone else's API).
"""

from __future__ import annotations

from collections.abc import Mapping

from kb_assets.core.extractors.event_context import Context, Registration, literal
from kb_assets.core.extractors.event_names import Where, call_where
from kb_assets.core.models import JSON
from kb_assets.core.symbols.model import Symbol

APP_CLASSES = frozenset({"FastAPI", "APIRouter"})
APP_EVENTS = frozenset({"startup", "shutdown"})
_MAX_DEPTH = 8
"""Subclass hops followed from a first-party class to ``FastAPI``."""


def is_app_class(ctx: Context, symbol: Symbol | None, depth: int = 0) -> bool:
    """Whether a resolved class is FastAPI's app or router class, or a first-party subclass of one."""
    if symbol is None or depth > _MAX_DEPTH:
        return False
    parts = (symbol.target or "").split(".")
    if parts[0] == "fastapi" and parts[-1] in APP_CLASSES:
        return True
    if symbol.kind != "class" or symbol.is_external or symbol.module is None:
        return False
    for base in (symbol.facts or {}).get("bases", []):
        dotted = base.get("dotted") if base.get("kind") in ("name", "subscript") else None
        if dotted and is_app_class(ctx, ctx.table.resolve(symbol.module, dotted), depth + 1):
            return True
    return False


def is_app(ctx: Context, symbol: Symbol | None) -> bool:
    """Whether a resolved name is a FastAPI app (or router) variable."""
    if symbol is None or symbol.kind != "attribute" or symbol.module is None:
        return False
    facts = symbol.facts or {}
    value, annotation = facts.get("value") or {}, facts.get("annotation") or {}
    callee = value.get("callee") if value.get("kind") == "call" else None
    if isinstance(facts.get("scope"), str) and callee:  # a function-local variable
        return is_app_class(ctx, ctx.resolve(Where(facts["scope"]), callee))
    if callee and is_app_class(ctx, ctx.table.resolve(symbol.module, callee)):
        return True
    dotted = annotation.get("dotted") if annotation.get("kind") == "name" else None
    return bool(dotted) and is_app_class(ctx, ctx.table.resolve(symbol.module, str(dotted)))


def register_on_event(
    ctx: Context, decorator: Mapping[str, JSON], receiver: str, handler: Symbol, where: Where
) -> None:
    """``@receiver.on_event("startup")`` on ``handler``."""
    assert handler.span is not None
    args, kwargs = decorator.get("args", []), decorator.get("kwargs", {})
    event = literal(args[0] if args else kwargs.get("event_type"))
    app = ctx.resolve(where, receiver)
    line = ctx.line(handler.span)
    if not _app_or_gap(ctx, app, receiver, event, line):
        return
    assert app is not None
    if not isinstance(event, str):
        ctx.gap("dynamic_event", f"{receiver}.on_event: event name is not a string literal", line)
        return
    registration = Registration("fastapi", event, app.target or "", f"decorator:{ctx.module}")
    ctx.add(handler, registration, handler.span, ctx.edges(app, "target"))


def register_call(ctx: Context, call: Mapping[str, JSON]) -> None:
    """``app.add_event_handler(...)``, ``FastAPI(lifespan=...)`` or ``app.router.lifespan_context = fn``."""
    form, callee = call["form"], str(call["callee"])
    if form == "constructor":
        _constructor(ctx, call)
        return
    args, kwargs, where, line = call["args"], call["kwargs"], call_where(call), int(call["line"])
    if form == "add_event_handler":
        receiver = callee.rsplit(".", 1)[0]
        event = args[0].get("str") if args else kwargs.get("event_type", {}).get("str")
        handler_arg = args[1] if len(args) > 1 else kwargs.get("func", {})
        site = "call"
    else:
        receiver = callee.removesuffix(".lifespan_context").removesuffix(".router")
        event, handler_arg, site = "lifespan", args[0], "assignment"
    app = ctx.resolve(where, receiver) if "." in callee else None
    if not _app_or_gap(ctx, app, receiver, event, line):
        return
    assert app is not None
    if not isinstance(event, str):
        ctx.gap("dynamic_event", f"{callee}: event name is not a string literal", line)
        return
    handler = ctx.handler(where, handler_arg, line, callee)
    if handler is not None:
        registration = Registration("fastapi", event, app.target or "", f"{site}:{ctx.module}")
        ctx.add(handler, registration, int(call["span"]), ctx.edges(app, "target"))


def _constructor(ctx: Context, call: Mapping[str, JSON]) -> None:
    """``app = FastAPI(lifespan=fn, on_startup=[...], on_shutdown=[...])``: the app is the variable."""
    where, line, span = call_where(call), int(call["line"]), int(call["span"])
    if not is_app_class(ctx, ctx.resolve(where, str(call["callee"]))):
        return
    bound = call.get("bound")
    if not isinstance(bound, str):
        ctx.gap("unresolved_app", f"{call['callee']}(...) is not assigned to a name", line)
        return
    target = f"{ctx.module}.{where.scope}.{bound}" if where.scope else f"{ctx.module}.{bound}"
    registration_site = f"call:{ctx.module}"
    for keyword, value in sorted(call["kwargs"].items()):
        if keyword == "lifespan":
            handlers, event = [value], "lifespan"
        elif keyword in ("on_startup", "on_shutdown"):
            handlers, event = value.get("list", [value]), keyword.removeprefix("on_")
        else:
            continue
        for item in handlers:
            handler = ctx.handler(where, item, line, f"{call['callee']}({keyword}=...)")
            if handler is not None:
                registration = Registration("fastapi", event, target, registration_site)
                ctx.add(handler, registration, span, [ctx.source.ground(span, "target")])


def _app_or_gap(ctx: Context, app: Symbol | None, receiver: str, event: JSON, line: int) -> bool:
    """True for an app; else an ``unresolved_app`` gap when the event is FastAPI's own."""
    if is_app(ctx, app):
        return True
    if event in APP_EVENTS or event == "lifespan":
        ctx.gap("unresolved_app", f"{receiver!r} does not resolve to a FastAPI app", line)
    return False
