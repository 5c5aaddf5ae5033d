"""The commit's FastAPI object graph: apps and routers, their routes, includes and mounts.

A ``Router`` is one ``FastAPI(...)``/``APIRouter(...)`` construction (or of a subclass), keyed by
the statement that binds it: ``(module, scope, name)``, where ``scope`` is the function building
it ("" at module level) and ``name`` may be ``self.app``. Route decorators, ``add_api_route``,
``include_router`` and ``mount`` statements anywhere in the commit are attached to every router
their receiver may be (a parameter passed several routers gets the statement on each), as items
ordered by (file path, source order) — FastAPI's registration order as far as it is static.
What cannot be attached becomes a gap here; prefixes and paths are evaluated when routes are
emitted (``api_routes``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kb_assets.core.extractors.route_names import Function, Names, Value
from kb_assets.core.extractors.route_scope import EXTRACTOR_ID, FactsIndex, Op, Place
from kb_assets.core.extractors.route_values import Values
from kb_assets.core.models import JSON, Gap, Grounding
from kb_assets.core.symbols.model import Symbol

_MAX_DEPTH = 12


@dataclass(frozen=True, slots=True)
class RouteDecl:
    """A route declared on a router: a decorator or an ``add_api_route`` call."""

    op: Op
    verb: str
    call: Mapping[str, JSON]
    handler: Function | None


@dataclass(frozen=True, slots=True)
class Edge:
    """``include_router`` (``kind="include"``) or ``mount`` of ``child`` into a router."""

    op: Op
    kind: str
    child: Router
    call: Mapping[str, JSON]


@dataclass(eq=False)
class Router:
    """One FastAPI app or APIRouter construction and what is registered on it."""

    key: tuple[str, str, str]
    kind: str
    value: Value
    items: list[tuple[tuple[str, int], RouteDecl | Edge]] = field(default_factory=list)
    included: bool = False

    @property
    def dotted(self) -> str:
        """``pkg.mod.router``, or ``pkg.mod.create_app.app`` for one built in a function."""
        return ".".join(part for part in self.key if part)

    @property
    def kwargs(self) -> Mapping[str, JSON]:
        """The constructor's keyword arguments (summaries)."""
        kwargs: Mapping[str, JSON] = self.value.value.get("kwargs", {})
        return kwargs

    def definition(self) -> Grounding:
        """The statement (module level) or function that builds it, role ``router``."""
        return self.value.place.ground("router", self.value.span)


class Graph:
    """Apps, routers and what is registered on them, for one commit."""

    def __init__(self, index: FactsIndex, names: Names, values: Values) -> None:
        self.index, self.names, self.values = index, names, values
        self.routers: dict[tuple[str, str, str], Router] = {}
        self.gaps: list[Gap] = []
        self._active: set[tuple[object, ...]] = set()
        self._known: dict[tuple[object, ...], tuple[Router, ...]] = {}
        for op in index.ops:
            if op.kind == "assign" and op.data["value"].get("kind") == "call":
                self.of_value(names.bound(op))
        for op in sorted(index.ops, key=lambda o: o.order):
            if op.kind == "route":
                self._route(op)
            elif op.kind == "call":
                self._call(op)

    def of(self, v: JSON, place: Place, depth: int = 0) -> list[Router]:
        """The routers an expression evaluated at ``place`` may be."""
        if not isinstance(v, dict) or depth > _MAX_DEPTH:
            return []
        if v.get("kind") == "call":
            return self.of_value(Value(v, place), depth + 1)
        if v.get("kind") != "name":
            return []
        found: list[Router] = []
        for target in self.names.resolve(v["dotted"], place):
            if isinstance(target, Value):
                found.extend(r for r in self.of_value(target, depth + 1) if r not in found)
        return found

    def of_value(self, value: Value, depth: int = 0) -> list[Router]:
        """The routers a bound value may be: a construction (keyed by its binding), a factory's result.

        An expression already being evaluated at the same place is a cycle (factories returning
        each other's results) and adds nothing; an answer is remembered for the rest of the commit.
        """
        v = value.value
        if not isinstance(v, dict):
            return []
        key = (id(v), value.place.source.path, value.place.scope, value.key)
        known = self._known.get(key)
        if known is not None:
            return list(known)
        if key in self._active:
            return []
        self._active.add(key)
        try:
            found = self._of_value(value, v, depth)
        finally:
            self._active.discard(key)
        self._known[key] = tuple(found)
        return found

    def _of_value(self, value: Value, v: dict[str, JSON], depth: int) -> list[Router]:
        if v.get("kind") == "name":
            return self.of(v, value.place, depth + 1)
        if v.get("kind") != "call" or not v.get("callee") or depth > _MAX_DEPTH:
            return []
        found: list[Router] = []
        for callee in self.names.resolve(v["callee"], value.place):
            if not isinstance(callee, Symbol):
                continue
            kind = self.values.class_kind(callee) if callee.kind == "class" or callee.is_external else None
            if kind is not None and value.key is not None:
                router = self.routers.setdefault(value.key, Router(value.key, kind, value))
                found.append(router)
            elif callee.kind == "function" and not callee.is_external:
                function = self.names.function_of(callee)
                for returned in self.names.returned(function) if function is not None else []:
                    found.extend(r for r in self.of_value(returned, depth + 1) if r not in found)
        return found

    def gap(self, op: Op, reason: str, detail: str) -> None:
        """Record a gap at an op's line."""
        self.gaps.append(Gap(op.place.source.path, reason, detail[:200], op.line, EXTRACTOR_ID))

    # -- statements ------------------------------------------------------------------------
    def _route(self, op: Op) -> None:
        call = op.data["decorator"]
        receiver, _, verb = str(call["callee"]).rpartition(".")
        place = op.place
        handler = Function(
            place.module, str(op.data["function"]), Place(place.source, ""), int(op.data["span"])
        )
        routers = self.of({"kind": "name", "dotted": receiver}, place)
        if not routers and _looks_like_path(call):
            self.gap(op, "unresolved_router", f"@{call['callee']}: cannot tell which app or router")
        for router in routers:
            router.items.append((op.order, RouteDecl(op, verb, call, handler)))

    def _call(self, op: Op) -> None:
        receiver, _, method = str(op.data.get("callee") or "").rpartition(".")
        if (
            method not in ("include_router", "mount", "add_api_route", "add_api_websocket_route")
            or not receiver
        ):
            return
        routers = self.of({"kind": "name", "dotted": receiver}, op.place)
        if not routers:
            if method != "mount" or _looks_like_path(op.data):
                self.gap(op, "unresolved_router", f"{op.data['callee']}: cannot tell which app or router")
            return
        if method.startswith("add_api"):
            self._add_route(op, routers, method)
            return
        argument = _argument(
            op.data, 0 if method == "include_router" else 1, "router" if method == "include_router" else "app"
        )
        children = self.of(argument, op.place)
        if method == "mount":
            children = [c for c in children if c.kind == "app"]
        if not children:
            reason = (
                "mount_not_fastapi" if method == "mount" and _is_call(argument) else f"unresolved_{method}"
            )
            self.gap(op, reason, f"{op.data['callee']}: {_describe(argument)}")
            return
        kind = "include" if method == "include_router" else "mount"
        for router in routers:
            for child in children:
                child.included = True
                router.items.append((op.order, Edge(op, kind, child, op.data)))

    def _add_route(self, op: Op, routers: list[Router], method: str) -> None:
        endpoint = _argument(op.data, 1, "endpoint")
        handler = (
            self.names.function(endpoint.get("dotted"), op.place) if endpoint.get("kind") == "name" else None
        )
        if handler is None:
            self.gap(op, "unresolved_handler", f"{op.data['callee']}: endpoint {_describe(endpoint)}")
        verb = "websocket" if method == "add_api_websocket_route" else "api_route"
        for router in routers:
            router.items.append((op.order, RouteDecl(op, verb, op.data, handler)))


def _argument(call: Mapping[str, JSON], position: int, keyword: str) -> dict[str, JSON]:
    """The argument passed at ``position`` or as ``keyword`` (``{"kind": "other"}`` if absent)."""
    if keyword in call["kwargs"]:
        value: dict[str, JSON] = call["kwargs"][keyword]
        return value
    args = call["args"]
    return args[position] if position < len(args) else {"kind": "other"}


def _looks_like_path(call: Mapping[str, JSON]) -> bool:
    """A first argument that is a literal string starting with ``/`` (or empty): really a route."""
    first = _argument(call, 0, "path")
    value = first.get("value")
    return first.get("kind") in ("literal", "fstring") and (
        not isinstance(value, str) or value[:1] in ("/", "")
    )


def _is_call(value: Mapping[str, JSON]) -> bool:
    return value.get("kind") == "call"


def _describe(value: Mapping[str, JSON]) -> str:
    """A short text for a value summary in a gap's detail."""
    if value.get("kind") == "name":
        return str(value["dotted"])
    if value.get("kind") == "call":
        return f"{value.get('callee')}(...)"
    return str(value.get("kind"))
