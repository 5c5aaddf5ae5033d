"""What calling a value runs, as first-party definitions (the edges one call site contributes)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kb_assets.core.callgraph.values import Cls, Def, Either, Fn, Inst, Resolved, Span

if TYPE_CHECKING:
    from kb_assets.core.callgraph.evaluate import Evaluator


Target = tuple[Def, frozenset[str], int, frozenset[Span]]
"""(definition run, forms, leading parameters the call does not supply, spans read)."""


def targets(ev: Evaluator, r: Resolved) -> list[Target]:
    """First-party definitions a call of ``r`` runs, each with its forms, how many leading
    parameters the call does not supply (1 for a bound method or an ``__init__``) and the spans
    its resolution read."""
    v = r.value
    if isinstance(v, Either):
        return [t for option in v.options for t in targets(ev, Resolved(option, r.forms, r.via))]
    if isinstance(v, Fn):
        return [(v.defn, r.forms or frozenset({"direct"}), 1 if v.bound else 0, r.via)]
    if isinstance(v, Cls):
        found: list[Target] = [(v.defn, r.forms | {"instantiation"}, 1, r.via)]
        init = ev.members.attribute(Resolved(Inst(v.defn)), "__init__")
        if init is not None and isinstance(init.value, Fn):
            found.append((init.value.defn, r.forms | init.forms | {"init"}, 1, r.via | init.via))
        return found
    if isinstance(v, Inst):
        call = ev.members.attribute(Resolved(v), "__call__")
        if call is not None and isinstance(call.value, Fn):
            return [(call.value.defn, r.forms | call.forms, 1, r.via | call.via)]
    return []
