"""Functions passed as arguments: who ends up calling them.

Two halves are gathered while every site is resolved: *parameter calls* (a function calls one of
its parameters, or a closure calls an enclosing function's parameter — ``def run(f): f()``) and
*arguments* (a resolved first-party call passes a name into a parameter — ``run(helper)``, and a
decorator passes the decorated definition). Where the two meet, the function that calls the
parameter calls the argument: an edge ``run → helper`` on the parameter call's lines, form
``passed_function``. A parameter forwarded into another call (``def later(cb): run(cb)``) is followed.

An argument's value is evaluated when its call is resolved, in the scope that passes it (not when
the halves are matched): what it reads then belongs to that scope's file (``resolutions``), and a
file replayed from the last commit's log brings its arguments already evaluated.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, TypeVar

from kb_assets.core.callgraph.index import ScopeRef
from kb_assets.core.callgraph.targets import Target, targets
from kb_assets.core.callgraph.values import FORM, Cls, Def, Param, Resolved, Span
from kb_assets.core.models import JSON

if TYPE_CHECKING:
    from kb_assets.core.callgraph.evaluate import Evaluator
    from kb_assets.core.callgraph.graph import CallGraph

_Key = tuple[str, int, str]
"""(path, scope index of the function, parameter name)."""

Argument = tuple[_Key, Resolved | None, frozenset[Span]]
"""One argument passed into a parameter: (parameter, its value, spans read)."""

_DROPPED = FORM["direct"] | FORM["closure"]

K = TypeVar("K")
V = TypeVar("V")


class Gathered:
    """Parameter calls and arguments by parameter, in the order they were given: a program's
    (``Passings``), or one file's, to be merged into a program's whole (``Passings.merge``)."""

    def __init__(self) -> None:
        self.calls: dict[_Key, list[tuple[Def, int, bool]]] = {}
        self.arguments: dict[_Key, list[tuple[Resolved | None, frozenset[Span]]]] = {}
        self.forwards: dict[_Key, list[_Key]] = {}
        """Each parameter passed on as an argument (``def later(cb): run(cb)``: ``cb``), and the
        parameters it is passed into, as given: kept as arguments come (6,464 of Django's 41,826
        arguments are parameters), where ``Passings.resolve`` went through every argument to
        find them at each build."""

    def parameter_call(self, param: Param, caller: Def, offset: int, main: bool) -> None:
        """``caller`` calls parameter ``param`` at line offset ``offset`` of its span."""
        self.calls.setdefault((param.path, param.scope, param.name), []).append((caller, offset, main))

    def add(self, argument: Argument) -> None:
        """Add one evaluated argument (``Passings.arguments_of``, through a file's log)."""
        key, value, via = argument
        self.arguments.setdefault(key, []).append((value, via))
        if value is not None and type(value.value) is Param:
            source = value.value
            self.forwards.setdefault((source.path, source.scope, source.name), []).append(key)

    def merge(self, other: Gathered) -> None:
        """Add what ``other`` gathered after what is here, parameter by parameter (one list
        extended per parameter instead of one call per argument: Django's logs hold 41,826)."""
        _extend(self.calls, other.calls)
        _extend(self.arguments, other.arguments)
        _extend(self.forwards, other.forwards)


def _extend(mine: dict[K, list[V]], theirs: Mapping[K, list[V]]) -> None:
    for key, found in theirs.items():
        if key in mine:
            mine[key] += found
        else:
            mine[key] = list(found)


class Passings(Gathered):
    """Parameter calls and arguments of one program, matched after every site is resolved."""

    def __init__(self, ev: Evaluator) -> None:
        super().__init__()
        self.ev = ev
        self._signatures: dict[tuple[str, int], tuple[frozenset[str], tuple[str, ...]]] = {}
        self._reads: dict[tuple[frozenset[Span], Span], frozenset[Span]] = {}

    def arguments_of(self, target: Target, extra: Mapping[str, JSON], ref: ScopeRef) -> list[Argument]:
        """What a call from scope ``ref`` that runs ``target`` passes into its parameters: each
        name argument in ``extra`` that meets a parameter, evaluated (the file's log adds them,
        ``add``)."""
        callee, _, shift, via = target
        if callee.scope is None or callee.kind != "function":
            return []
        params, positional = self._params(callee.path, callee.scope)
        read: frozenset[Span] | None = None
        found: list[Argument] = []
        for i, arg in enumerate(extra.get("a", [])):
            if arg is not None and i + shift < len(positional):
                read = read or self._read(via, ref)
                found.append(
                    ((callee.path, callee.scope, positional[i + shift]), self._value(ref, str(arg)), read)
                )
        for name, arg in sorted(extra.get("k", {}).items()):
            if name in params:
                read = read or self._read(via, ref)
                found.append(((callee.path, callee.scope, name), self._value(ref, str(arg)), read))
        return found

    def _read(self, via: frozenset[Span], ref: ScopeRef) -> frozenset[Span]:
        """What passing an argument from ``ref`` read: the call's spans and the scope's own, one
        shared set per distinct pair (these sets are kept in the logs of ``kb watch``)."""
        key = (via, self.ev.scopes.span(ref))
        found = self._reads.get(key)
        if found is None:
            found = self._reads[key] = via | {key[1]}
        return found

    def _params(self, path: str, scope: int) -> tuple[frozenset[str], tuple[str, ...]]:
        """A function's parameter names, and those that can be passed by position (cached per
        function: it depends on the call facts alone, and popular callees are called everywhere)."""
        key = (path, scope)
        found = self._signatures.get(key)
        if found is None:
            params = [str(p) for p in self.ev.scopes.record(ScopeRef(path, scope)).get("params", [])]
            star = next((i for i, p in enumerate(params) if p.startswith("*")), len(params))
            found = self._signatures[key] = (frozenset(params), tuple(params[:star]))
        return found

    def resolve(self, graph: CallGraph) -> set[tuple[str, str]]:
        """Add an edge from each parameter call to each function passed into that parameter,
        following parameters forwarded as arguments into further calls (cycle-safe); the keys of
        the edges it added to.

        An argument's value is made a callee (``Resolved.through``) only when its parameter
        reaches a parameter call: on Django 217 parameter calls meet 41,826 arguments, and
        making every one took ~35 ms of each warm commit. Only the parameters from which a
        parameter call can be reached (``_reaching``) are looked at, in order: 149 of the 6,822
        parameters that Django's arguments go into. On Django's full graph this took 41-67 ms
        before, going through every parameter's arguments and forwards, and takes 26-29 ms."""
        added: set[tuple[str, str]] = set()
        calls, forwards = self.calls, self.forwards
        for key in sorted(_reaching(calls.keys(), forwards).intersection(self.arguments)):
            arguments = self.arguments[key]
            values = [(v, via) for v, via in arguments if v is not None and type(v.value) is not Param]
            reached = [calls[r] for r in _closure(key, forwards) if r in calls] if values else None
            if not reached:
                continue
            passed = [value.through(via) for value, via in values]
            for sites in reached:
                for caller, offset, main in sites:
                    for value in passed:
                        for callee, forms, shift, via in targets(self.ev, value):
                            kept = (forms & ~_DROPPED) | FORM["passed_function"]
                            site = (caller.path, caller.span, offset)
                            graph.add_edge(caller, (callee, kept, shift, via), site, main)
                            added.add((caller.dotted, callee.dotted))
        return added

    def _value(self, ref: ScopeRef, arg: str) -> Resolved | None:
        """An argument's value (``#n``: the definition of scope n, passed by a decorator)."""
        if arg.startswith("#"):
            # A decorated class is not called by what decorates it (class decorators return or
            # register it; a decorator that also accepts functions only calls those).
            found = self.ev.members.definition(ScopeRef(ref.path, int(arg[1:])), "direct")
            return found if type(found.value) is not Cls else None
        return self.ev.expr(ref, arg)


def _closure(start: _Key, forwards: Mapping[_Key, list[_Key]]) -> list[_Key]:
    """``start`` and every parameter it is forwarded into, transitively, in a stable order."""
    seen = [start]
    stack = [start]
    while stack:
        for nxt in sorted(forwards.get(stack.pop(), [])):
            if nxt not in seen:
                seen.append(nxt)
                stack.append(nxt)
    return seen


def _reaching(ends: Iterable[_Key], forwards: Mapping[_Key, list[_Key]]) -> set[_Key]:
    """``ends`` and every parameter forwarded into one of them, transitively: the parameters
    whose ``_closure`` meets ``ends``."""
    back: dict[_Key, list[_Key]] = {}
    for source, into in forwards.items():
        for key in into:
            back.setdefault(key, []).append(source)
    found = set(ends)
    stack = list(found)
    while stack:
        for source in back.get(stack.pop(), ()):
            if source not in found:
                found.add(source)
                stack.append(source)
    return found
