"""From the router graph to one draft per served (method, path): prefixes, tags, models, grounding.

Walking an app depth first in registration order reproduces FastAPI's own composition: a route's
path is every enclosing ``include_router`` prefix and router prefix, outermost first, then the
route's own path (an ``APIRouter(prefix=...)`` applies to its routes and, through the include
context, to every router it includes); tags are the including routers' tags and each include's
``tags=``, outermost first, then the declaring router's tags and the route's own. A mounted
FastAPI sub-app contributes its routes under the mount path, with its own tags only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kb_assets.core.extractors.base import Draft
from kb_assets.core.extractors.route_graph import Edge, Graph, RouteDecl, Router
from kb_assets.core.extractors.route_scope import EXTRACTOR_ID, Op
from kb_assets.core.extractors.route_values import Model
from kb_assets.core.models import JSON, Gap, Grounding

_HTTP_VERBS = frozenset({"get", "post", "put", "patch", "delete", "head", "options", "trace"})


@dataclass(frozen=True, slots=True)
class Context:
    """What the routers above a router contribute: prefix, tags, grounding, app and mount point."""

    prefix: str
    tags: tuple[str, ...]
    trail: tuple[Grounding, ...]
    app: str | None
    mounted_at: str | None = None
    stack: tuple[tuple[str, str, str], ...] = ()
    conditional: bool = False


@dataclass
class Emitter:
    """Collects drafts (first of each (method, path) wins) and gaps while walking apps."""

    graph: Graph
    drafts: dict[tuple[str, str], Draft] = field(default_factory=dict)
    gaps: list[Gap] = field(default_factory=list)

    def walk(self, router: Router, ctx: Context) -> None:
        """Emit every route reachable from ``router`` under the context ``ctx``."""
        if router.key in ctx.stack:
            return
        values = self.graph.values
        prefix, prefix_ground = values.string(router.kwargs.get("prefix", _EMPTY), router.value.place)
        tags, tags_ground = values.strings(router.kwargs.get("tags", _NO_TAGS), router.value.place)
        if prefix is None:
            detail = f"{router.dotted}: prefix cannot be evaluated statically"
            self.gaps.append(
                Gap(router.value.place.source.path, "dynamic_prefix", detail, None, EXTRACTOR_ID)
            )
            return
        own = Context(
            ctx.prefix + prefix,
            ctx.tags + tuple(tags or ()),
            (*ctx.trail, router.definition(), *prefix_ground, *tags_ground),
            ctx.app,
            ctx.mounted_at,
            (*ctx.stack, router.key),
            ctx.conditional,
        )
        for _, item in sorted(router.items, key=lambda pair: pair[0]):
            if isinstance(item, Edge):
                self._edge(item, own, ctx)
            else:
                self._route(item, router, own)

    def _edge(self, edge: Edge, own: Context, outer: Context) -> None:
        values, place = self.graph.values, edge.op.place
        site = place.ground(edge.kind, self.graph.index.scope_span(place))
        conditional = own.conditional or bool(edge.op.data.get("cond"))
        if edge.kind == "mount":
            path, ground = values.string(_arg(edge.call, 0, "path"), place)
            if path is None:
                self._gap(edge.op, "dynamic_prefix", f"{edge.op.data['callee']}: mount path is not static")
                return
            at = outer.prefix + path.rstrip("/")
            ctx = Context(at, (), (*own.trail, site, *ground), own.app, at, own.stack, conditional)
            self.walk(edge.child, ctx)
            return
        prefix, ground = values.string(edge.call["kwargs"].get("prefix", _EMPTY), place)
        tags, tags_ground = values.strings(edge.call["kwargs"].get("tags", _NO_TAGS), place)
        if prefix is None:
            self._gap(edge.op, "dynamic_prefix", f"{edge.op.data['callee']}: prefix is not static")
            return
        trail = (*own.trail, site, *ground, *tags_ground)
        tags_in = own.tags + tuple(tags or ())
        ctx = Context(own.prefix + prefix, tags_in, trail, own.app, own.mounted_at, own.stack, conditional)
        self.walk(edge.child, ctx)

    def _route(self, decl: RouteDecl, router: Router, ctx: Context) -> None:
        values, place, kwargs = self.graph.values, decl.op.place, decl.call["kwargs"]
        path, path_ground = values.string(_arg(decl.call, 0, "path"), place)
        if path is None:
            self._gap(decl.op, "dynamic_path", f"{decl.call['callee']}: path is not static")
            return
        methods = self._methods(decl)
        if methods is None:
            self._gap(decl.op, "dynamic_methods", f"{decl.call['callee']}: methods are not static")
            return
        words: list[str] = []
        model = self._model(decl, words)
        status, status_ground = values.status(kwargs.get("status_code", _NONE), place)
        if status is None and kwargs.get("status_code", _NONE) != _NONE:
            words.append("dynamic_status_code")
        tags, tags_ground = values.strings(kwargs.get("tags", _NO_TAGS), place)
        if tags is None:
            words.append("dynamic_tags")
        name, _ = values.string(kwargs.get("name", _NONE), place)
        handler = decl.handler
        grounding = {*ctx.trail, *path_ground, *status_ground, *tags_ground, *model.grounding}
        if handler is not None:
            grounding.add(handler.place.source.ground(handler.span, "handler"))
        if decl.op.kind == "call":
            grounding.add(place.ground("route", self.graph.index.scope_span(place)))
        payload: dict[str, JSON] = {
            "handler": handler.dotted if handler is not None else None,
            "response_model": model.dotted,
            "status_code": status,
            "tags": [*ctx.tags, *(tags or [])] if decl.verb != "websocket" else [],
            "name": name or (handler.qualname.rpartition(".")[2] if handler is not None else None),
            "router": router.dotted,
            "app": ctx.app,
        }
        payload.update(_extras(decl, ctx, model, words))
        for method in methods:
            self._add(decl.op, method, ctx.prefix + path, payload, tuple(sorted(grounding)))

    def _add(
        self, op: Op, method: str, path: str, payload: dict[str, JSON], grounding: tuple[Grounding, ...]
    ) -> None:
        key = (method, path)
        if key in self.drafts:
            first = self.drafts[key].payload.get("handler")
            self._gap(op, "duplicate_route", f"{method} {path} already served by {first}")
            return
        full = {"method": method, "path": path, **payload}
        self.drafts[key] = Draft("api_route", f"api:{method} {path}", full, grounding)

    def _methods(self, decl: RouteDecl) -> list[str] | None:
        if decl.verb in _HTTP_VERBS:
            return [decl.verb.upper()]
        if decl.verb == "websocket":
            return ["WEBSOCKET"]
        given = decl.call["kwargs"].get("methods")
        if given is None:
            return ["GET"]
        methods, _ = self.graph.values.strings(given, decl.op.place)
        return sorted({m.upper() for m in methods}) if methods is not None else None

    def _model(self, decl: RouteDecl, words: list[str]) -> Model:
        """Explicit ``response_model=`` wins; else the handler's return annotation (inferred)."""
        if decl.verb == "websocket":
            return Model()
        values, kwargs = self.graph.values, decl.call["kwargs"]
        if "response_model" in kwargs:
            model = values.model(kwargs["response_model"], decl.op.place, inferred=False)
        elif decl.handler is not None:
            handler = decl.handler
            returns = self.graph.index.annotation(handler.module, handler.qualname)
            model = values.model(returns, handler.place, inferred=True) if returns is not None else Model()
        else:
            model = Model()
        if model.unresolved is not None:
            words.append("unresolved_response_model")
        return model

    def _gap(self, op: Op, reason: str, detail: str) -> None:
        self.gaps.append(Gap(op.place.source.path, reason, detail[:200], op.line, EXTRACTOR_ID))


def _extras(decl: RouteDecl, ctx: Context, model: Model, words: list[str]) -> dict[str, JSON]:
    """The optional payload fields: shape, mount point, schema visibility, condition, gap words."""
    extras: dict[str, JSON] = {}
    if model.shape:
        extras["response_model_shape"] = model.shape
    if ctx.mounted_at is not None:
        extras["mounted_at"] = ctx.mounted_at
    if decl.call["kwargs"].get("include_in_schema", {}).get("value") is False:
        extras["include_in_schema"] = False
    if ctx.conditional or decl.op.data.get("cond"):
        extras["conditional"] = True
    if decl.handler is None:
        words.append("unresolved_handler")
    if words:
        extras["gap"] = ",".join(words)
    return extras


_EMPTY: dict[str, JSON] = {"kind": "literal", "value": ""}
_NONE: dict[str, JSON] = {"kind": "literal", "value": None}
_NO_TAGS: dict[str, JSON] = {"kind": "literal", "value": []}


def _arg(call: dict[str, JSON] | object, position: int, keyword: str) -> JSON:
    """The argument at ``position`` or ``keyword`` of a call summary (``{"kind": "other"}``)."""
    assert isinstance(call, dict)
    if keyword in call["kwargs"]:
        return call["kwargs"][keyword]
    args = call["args"]
    return args[position] if position < len(args) else {"kind": "other"}
