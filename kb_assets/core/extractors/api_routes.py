"""FastAPI contracts (``api_route``): one artifact per (method, path) a client can call.

Apps are ``FastAPI(...)`` constructions (subclasses and aliases included, found through the symbol
table); routers are ``APIRouter(...)`` ones. Both may be built at module level or inside
functions (app factories ``def create_app(): app = FastAPI(); ...; return app``, router factories,
``self.app`` in a class), and routes and includes may be registered from any module, including
functions that receive the app as a parameter (its call sites say which). Every app that is not
mounted into another is walked (``route_emit``): include prefixes, router prefixes and mount paths
compose into the full path a client calls.

Payload: ``method`` (upper case; ``WEBSOCKET`` for websocket routes), ``path``, ``handler``
(dotted path; nested functions as ``outer.inner``), ``response_model`` (explicit
``response_model=`` wins, even ``None``; else the return annotation, unless it is a ``Response``
or a stream; the item model of a container with ``response_model_shape``; external classes keep
their external dotted name, builtins are ``builtins.dict``), ``status_code`` (int or null),
``tags`` (FastAPI's order), ``name``, ``router`` (where the route is declared), ``app`` (the app
serving it: its module-level name, else where it is built; null for a router no app includes),
``mounted_at`` (the mount path, for a sub-app's route), ``include_in_schema`` (only when false)
and ``gap`` (comma-separated words) when part of it is not static.

Decisions: a router that no app includes still yields its routes (its own prefix only, ``app``
null) and a ``router_not_included`` gap; a (method, path) served twice keeps the first in
registration order (what FastAPI matches) and records ``duplicate_route``; apps are walked in
path order, with test, example and docs files last. Grounding: the handler (``handler``), the
response model class (``response_model``), every app and router on the way (``router``: the
assignment, or the function that builds it), every ``include_router``/``mount`` statement
(``include``/``mount``: expression statements are not spans, so the module span, or the enclosing
function's) and ``add_api_route`` (``route``), plus first-party constants read (``constant``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kb_assets.core.extractors.base import Extraction, LocatedGrounding
from kb_assets.core.extractors.route_emit import Context, Emitter
from kb_assets.core.extractors.route_facts import collect_routes
from kb_assets.core.extractors.route_graph import Graph, Router
from kb_assets.core.extractors.route_names import Names
from kb_assets.core.extractors.route_scope import EXTRACTOR_ID, FactsIndex
from kb_assets.core.extractors.route_values import Values
from kb_assets.core.models import JSON, Gap
from kb_assets.core.program import Program
from kb_assets.core.spans import ParsedSource
from kb_assets.core.symbols.table import symbol_table

_SECONDARY = frozenset({"tests", "test", "testing", "examples", "example", "docs", "docs_src", "benchmarks"})


class ApiRoutesExtractor:
    """The ``api_routes`` asset's extractor."""

    extractor_id = EXTRACTOR_ID
    version = "1"
    facts_version = "1"
    kind = "api_route"
    asset_name = "api_routes"
    description = "FastAPI routes (method, full path, handler, response model), resolved across modules."

    def collect(self, source: ParsedSource) -> JSON:
        """Scopes and routing statements of one blob (None for files that cannot route)."""
        return collect_routes(source)

    def resolve(self, program: Program) -> Extraction:
        """Every (method, path) served by the commit's apps, plus routers no app includes."""
        index = FactsIndex(program)
        if not index.ops:
            return Extraction(drafts=())
        names = Names(index, symbol_table(program))
        graph = Graph(index, names, Values(names))
        emitter = Emitter(graph)
        aliases = _aliases(graph)
        routers = sorted(graph.routers.values(), key=_rank)
        for router in routers:
            if router.kind == "app" and not router.included:
                emitter.walk(router, Context("", (), (), aliases.get(router.key, router.dotted)))
        for router in routers:
            if router.kind == "router" and not router.included and router.items:
                detail = f"{router.dotted}: no app includes this router"
                emitter.gaps.append(
                    Gap(router.value.place.source.path, "router_not_included", detail, None, EXTRACTOR_ID)
                )
                emitter.walk(router, Context("", (), (), None))
        drafts = tuple(emitter.drafts[key] for key in sorted(emitter.drafts))
        gaps = sorted(set(graph.gaps + emitter.gaps), key=lambda g: (g.path, g.line or 0, g.reason, g.detail))
        return Extraction(drafts=drafts, gaps=tuple(gaps))

    def render(self, payload: Mapping[str, JSON], grounding: Sequence[LocatedGrounding]) -> dict[str, JSON]:
        """The payload as stored: it has no location-derived fields."""
        return dict(payload)


def _rank(router: Router) -> tuple[bool, str, tuple[str, str, str]]:
    """Walk order: primary code before tests/examples/docs, then by path and key."""
    path = router.value.place.source.path
    parts = path.split("/")
    name = parts[-1]
    secondary = bool(_SECONDARY.intersection(parts[:-1])) or name.startswith("test_") or name == "conftest.py"
    return (secondary, path, router.key)


def _aliases(graph: Graph) -> dict[tuple[str, str, str], str]:
    """For apps built in functions: the first module-level name bound to them (``app = create_app()``)."""
    found: dict[tuple[str, str, str], str] = {}
    for op in sorted(graph.index.ops, key=lambda o: o.order):
        if op.kind != "assign" or op.place.scope or op.data["value"].get("kind") not in ("call", "name"):
            continue
        for router in graph.of_value(graph.names.bound(op)):
            name = f"{op.place.module}.{op.data['target']}"
            if router.key[1] and router.kind == "app":
                found.setdefault(router.key, name)
    return found
