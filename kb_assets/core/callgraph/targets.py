"""What calling a value runs, as first-party definitions (the edges one call site contributes)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kb_assets.core.callgraph.values import (
    FORM,
    Cls,
    Def,
    Either,
    Fn,
    Forms,
    Inst,
    Resolved,
    Span,
    union_spans,
)

if TYPE_CHECKING:
    from kb_assets.core.callgraph.evaluate import Evaluator


Target = tuple[Def, Forms, int, frozenset[Span]]
"""(definition run, forms, leading parameters the call does not supply, spans read)."""


def targets(ev: Evaluator, r: Resolved) -> list[Target]:
    """First-party definitions a call of ``r`` runs, each with its forms, how many leading
    parameters the call does not supply (1 for a bound method or an ``__init__``) and the spans
    its resolution read."""
    v = r.value
    if type(v) is Either:
        return [t for option in v.options for t in targets(ev, Resolved(option, r.forms, r.via))]
    if type(v) is Fn:
        return [(v.defn, r.forms or FORM["direct"], 1 if v.bound else 0, r.via)]
    if type(v) is Cls:
        found: list[Target] = [(v.defn, r.forms | FORM["instantiation"], 1, r.via)]
        init = ev.members.attribute(Resolved(Inst(v.defn)), "__init__")
        if init is not None and type(init.value) is Fn:
            found.append(
                (init.value.defn, r.forms | init.forms | FORM["init"], 1, union_spans(r.via, init.via))
            )
        return found
    if type(v) is Inst:
        call = ev.members.attribute(Resolved(v), "__call__")
        if call is not None and type(call.value) is Fn:
            return [(call.value.defn, r.forms | call.forms, 1, union_spans(r.via, call.via))]
    return []
