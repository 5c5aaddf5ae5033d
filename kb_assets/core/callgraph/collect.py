"""File-local call facts: every call site and every local binding, per scope, in one query pass.

Facts of one blob (JSON; spans by ordinal; nothing resolved)::

    {"scopes": [S...], "dyn": [[line, text]...]}      # scope 0 is the module; "dyn": getattr()()/eval/exec
    S = {"s": span, "k": "m"|"c"|"f", "up": enclosing scope, "defs": {name: scope},
         "calls": [[expr, offset, X?]...],   # offset from the scope span's first line
         "binds": {name: [expr|null...]}, "shadow": [names bound to unknown values],
         "glob": [...], "nonl": [...],        # global / nonlocal declarations
         function: "params", "ann", "rt", "flag", "ret": [expr|""|null], "gen": 1,
                   "sattr": {attr: [expr|null]}   (``self.attr = ...`` in a method)
         class: "bases": [expr|null], "ann"}
    X = {"a": [expr|null] positional args, "k": {name: expr} keyword args, "d": 1 (a decorator
         applied: "a" holds "#<scope>" of the decorated definition), "m": 1 (under
         ``if __name__ == "__main__":``), "mode": str (an ``open`` mode literal)}

``expr`` is an expression string (``exprs``); binds also use ``import:a.b``, ``from:..m:x`` and
``with:expr`` (a ``with ... as`` target). Module-level bindings are the symbol table's business and
are not repeated here. One tree-sitter query (no text predicates) defines every node of interest;
its matches are rebuilt from the nodes the parse's fingerprint walk kept (``walked``), and the
query itself runs only where that walk could not keep them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kb_assets.core import treesitter as ts
from kb_assets.core.callgraph.bindings import Bindings
from kb_assets.core.callgraph.exprs import callee_text
from kb_assets.core.callgraph.sites import call_extra, decorator_sites, main_guards
from kb_assets.core.callgraph.skeleton import Match, Skeleton
from kb_assets.core.callgraph.walked import matches
from kb_assets.core.models import JSON

if TYPE_CHECKING:
    from kb_assets.core.spans import ParsedSource

_DEFINITIONS, _DECORATORS, _CALLS = frozenset({0, 1}), 2, 3
_DYNAMIC = frozenset({"eval", "exec"})
_FUNCTION = ts.PYTHON.field_id_for_name("function") or 0
_ARGUMENTS = ts.PYTHON.field_id_for_name("arguments") or 0


def collect_calls(source: ParsedSource) -> JSON:
    """The call facts of one parsed blob (see the module docstring)."""
    definitions: list[Match] = []
    decorators: list[Match] = []
    calls: list[Match] = []
    rest: list[tuple[int, Match]] = []
    found = ts.matches(ts.query("calls"), source.root) if source.walked is None else matches(source.walked)
    for pattern, match in found:
        if pattern == _CALLS:
            calls.append(match)
        elif pattern in _DEFINITIONS:
            definitions.append(match)
        elif pattern == _DECORATORS:
            decorators.append(match)
        else:
            rest.append((pattern, match))
    sk = Skeleton(source, definitions, decorators)
    dynamic = _call_sites(source, sk, calls)
    bindings = Bindings(source, sk)
    for pattern, match in rest:
        bindings.handle(pattern, match)
    bindings.imports()
    decorator_sites(sk)
    return {"scopes": sk.scopes, "dyn": dynamic} if dynamic else {"scopes": sk.scopes}


def _call_sites(source: ParsedSource, sk: Skeleton, matches: list[Match]) -> list[JSON]:
    """Record every call site in its scope; return the dynamic ones (``getattr(...)()``, eval, exec)."""
    guards = main_guards(source)
    dynamic: list[JSON] = []
    for match in matches:
        call = match["call"][0]
        function, arguments = call.child_by_field_id(_FUNCTION), call.child_by_field_id(_ARGUMENTS)
        if function is None or arguments is None:
            continue
        expr = callee_text(source, function)
        if expr is None:
            continue
        line = function.start_point[0] + 1
        if expr in _DYNAMIC or expr.startswith("getattr()"):
            dynamic.append(
                [
                    line,
                    source.source[function.start_byte : arguments.end_byte][:120].decode("utf-8", "replace"),
                ]
            )
            continue
        start = function.start_byte
        i = sk.at(start)
        site: list[JSON] = [expr, line - sk.lines[i]]
        extra = call_extra(source, arguments, expr)
        if i == 0 and guards and any(a <= start < b for a, b in guards):
            extra["m"] = 1
        if extra:
            site.append(extra)
        scope = sk.scopes[i]
        if "calls" in scope:
            scope["calls"].append(site)
        else:
            scope["calls"] = [site]
    return dynamic
