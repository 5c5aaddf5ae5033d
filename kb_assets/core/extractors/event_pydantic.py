"""pydantic validators as event handlers: ``@field_validator``, ``@model_validator``, v1 ``@validator``
and ``@root_validator`` (from ``pydantic``, ``pydantic.v1``, ``pydantic.class_validators``,
``pydantic.functional_validators``, ... — any decorator the symbol table resolves to a ``pydantic``
name with one of these four last segments).

The event is the validator kind with what it applies to: ``field_validator:email,name`` (fields in
written order; ``:before``/``:wrap``/``:plain`` appended for a non-default ``mode``),
``validator:email`` (``:pre`` appended for ``pre=True``), ``model_validator:after`` and
``root_validator:pre``/``root_validator:post`` (the mode is always spelled out). The target is
the class whose body defines the method. A field list that is not all string literals is a
``dynamic_event`` gap; a validator outside a class body is ``validator_outside_class``.
"""

from __future__ import annotations

from collections.abc import Mapping

from kb_assets.core.extractors.event_context import Context, Registration, literal
from kb_assets.core.extractors.event_names import call_where
from kb_assets.core.models import JSON
from kb_assets.core.symbols.model import Symbol

FIELD_VALIDATORS = frozenset({"field_validator", "validator"})
MODEL_VALIDATORS = frozenset({"model_validator", "root_validator"})
VALIDATORS = FIELD_VALIDATORS | MODEL_VALIDATORS


def is_validator(symbol: Symbol | None) -> bool:
    """Whether a resolved decorator is one of pydantic's validator decorators."""
    target = symbol.target if symbol is not None else None
    if target is None:
        return False
    parts = target.split(".")
    return parts[0] == "pydantic" and len(parts) > 1 and parts[-1] in VALIDATORS


def validator_event(kind: str, decorator: Mapping[str, JSON]) -> str | None:
    """The event string of one validator decorator summary (None: its fields are not literal)."""
    args = decorator.get("args", []) if decorator.get("kind") == "call" else []
    kwargs = decorator.get("kwargs", {}) if decorator.get("kind") == "call" else {}
    mode = literal(kwargs["mode"]) if "mode" in kwargs else "after"
    if not isinstance(mode, str):
        return None
    if kind == "model_validator":
        return f"model_validator:{mode}"
    if kind == "root_validator":
        return f"root_validator:{'pre' if literal(kwargs.get('pre')) is True else 'post'}"
    fields = [literal(a) for a in args]
    if not fields or not all(isinstance(f, str) for f in fields):
        return None
    event = f"{kind}:{','.join(str(f) for f in fields)}"
    if kind == "field_validator" and mode != "after":
        event += f":{mode}"
    if kind == "validator" and literal(kwargs.get("pre")) is True:
        event += ":pre"
    return event


def register_validator(
    ctx: Context,
    decorator: Mapping[str, JSON],
    handler: Symbol,
    owner: tuple[str, int] | None,
    site: tuple[int, str, int],
) -> None:
    """Record one validator registration of ``handler`` (or the gap that prevents it); ``site``
    is the registration's (span ordinal, form, line)."""
    span, form, line = site
    kind = str(decorator.get("callee") or decorator.get("dotted")).rsplit(".", 1)[-1]
    if owner is None:
        ctx.gap("validator_outside_class", f"{handler.target} is not a method", line)
        return
    event = validator_event(kind, decorator)
    if event is None:
        ctx.gap("dynamic_event", f"{kind} fields of {handler.target} are not string literals", line)
        return
    qualname, class_span = owner
    registration = Registration("pydantic", event, f"{ctx.module}.{qualname}", f"{form}:{ctx.module}")
    ctx.add(handler, registration, span, [ctx.source.ground(class_span, "target")])


def register_validator_call(ctx: Context, call: Mapping[str, JSON]) -> None:
    """``check = field_validator("a")(shared_check)`` in a class body."""
    where, line = call_where(call), int(call["line"])
    if not is_validator(ctx.resolve(where, str(call["callee"]))):
        return
    handler = ctx.handler(where, call["args"][0], line, str(call["callee"]))
    if handler is not None:
        owner = (str(call["owner"]), int(call["owner_span"]))
        register_validator(ctx, call["decorator"], handler, owner, (int(call["span"]), "call", line))
