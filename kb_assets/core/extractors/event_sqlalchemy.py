"""SQLAlchemy event listeners: ``@event.listens_for(Target, "evt")`` and ``event.listen(Target,
"evt", fn)`` (also ``from sqlalchemy.event import listen`` and ``sa.event.listen``).

Recognition is by resolution: the decorator or callee must resolve through the symbol table to
``sqlalchemy...event...listens_for``/``listen``, so ``socket.listen`` or an unrelated ``listen`` is
never mistaken for one. The handler, the target class and the ``listen`` call may sit in three
different files: both arguments are resolved where the call is written. The target is the
first-party dotted path (a class, a class attribute such as ``User.email``, a module variable such
as ``engine``; a member the table cannot follow, like ``Base.metadata``, keeps its written tail) or
the external dotted name (``sqlalchemy.engine.Engine``), grounded on its definition when
first-party. Gaps: ``listen_in_function`` (a ``listen`` call inside a function body registers
only when and as often as that function runs), ``lambda_listener``, ``dynamic_event`` (a
non-literal event name), ``unresolved_target`` and ``unresolved_handler``.
"""

from __future__ import annotations

from collections.abc import Mapping

from kb_assets.core.extractors.event_context import Context, Registration, literal
from kb_assets.core.extractors.event_names import Where, call_where
from kb_assets.core.models import JSON
from kb_assets.core.symbols.model import Symbol


def is_sqlalchemy(symbol: Symbol | None, name: str) -> bool:
    """Whether a resolved callee is SQLAlchemy's ``event.listen`` or ``event.listens_for``."""
    parts = (symbol.target or "").split(".") if symbol is not None else []
    return len(parts) > 2 and parts[0] == "sqlalchemy" and "event" in parts[1:-1] and parts[-1] == name


def register_listens_for(ctx: Context, decorator: Mapping[str, JSON], handler: Symbol, where: Where) -> None:
    """``@event.listens_for(Target, "evt")`` on ``handler``."""
    assert handler.span is not None
    args, kwargs = decorator.get("args", []), decorator.get("kwargs", {})
    target_summary = args[0] if args else kwargs.get("target", {})
    event = literal(args[1] if len(args) > 1 else kwargs.get("identifier"))
    written = target_summary.get("dotted") if target_summary.get("kind") == "name" else None
    line = ctx.line(handler.span)
    _register(ctx, where, written, event, handler, site=(handler.span, "decorator", line))


def register_listen(ctx: Context, call: Mapping[str, JSON]) -> None:
    """``event.listen(Target, "evt", fn)`` written outside any function body."""
    where, line = call_where(call), int(call["line"])
    if call.get("in_function"):
        ctx.gap("listen_in_function", f"{call['callee']}(...) inside {where.scope}", line)
        return
    args, kwargs = call["args"], call["kwargs"]
    target_arg = args[0] if args else kwargs.get("target", {})
    event = (args[1] if len(args) > 1 else kwargs.get("identifier", {})).get("str")
    handler_arg = args[2] if len(args) > 2 else kwargs.get("fn", {})
    handler = ctx.handler(where, handler_arg, line, str(call["callee"]))
    if handler is not None:
        _register(ctx, where, target_arg.get("name"), event, handler, site=(int(call["span"]), "call", line))


def _register(
    ctx: Context, where: Where, written: JSON, event: JSON, handler: Symbol, *, site: tuple[int, str, int]
) -> None:
    """Resolve the target and record the registration (or the gap that prevents it); ``site`` is
    the registration's (span ordinal, form, line)."""
    span, form, line = site
    target = ctx.target(where, written) if isinstance(written, str) else None
    if target is None or target.target is None:
        detail = f"cannot resolve listener target {written!r}" if written else "target is not a name"
        ctx.gap("unresolved_target", f"{handler.target}: {detail}", line)
        return
    if not isinstance(event, str):
        ctx.gap("dynamic_event", f"{handler.target}: event name is not a string literal", line)
        return
    registration = Registration("sqlalchemy", event, target.target, f"{form}:{ctx.module}")
    ctx.add(handler, registration, span, ctx.edges(target, "target"))
