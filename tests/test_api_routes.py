"""Unit tests of the ``api_routes`` extractor on in-memory programs (no git, no store).

Each test states one FastAPI resolution rule: where apps and routers come from, how prefixes,
tags and models compose, and what becomes a gap instead of a route.
"""

from __future__ import annotations

from typing import Any

import pytest

from kb_assets.core.extractors.api_routes import ApiRoutesExtractor
from kb_assets.core.extractors.base import Extraction
from tests.programs import program_from_files


def _extract(files: dict[str, str]) -> Extraction:
    return ApiRoutesExtractor().resolve(program_from_files({"svc/__init__.py": "", **files}))


def _routes(files: dict[str, str]) -> dict[str, dict[str, Any]]:
    return {d.logical_key: dict(d.payload) for d in _extract(files).drafts}


def _gaps(files: dict[str, str]) -> set[tuple[str, str]]:
    return {(g.path, g.reason) for g in _extract(files).gaps}


def test_app_factory_and_registration_function_across_modules() -> None:
    """An app built and returned by a factory, with routers included by a function that receives
    the app as a parameter (its call site says which app), is named by its module-level alias."""
    routes = _routes(
        {
            "svc/items.py": (
                "from fastapi import APIRouter as R\n"
                "router = R(prefix='/items', tags=['items'])\n"
                "@router.get('/{i}')\ndef get_item(i: int): ...\n"
            ),
            "svc/app.py": (
                "from fastapi import FastAPI\nfrom svc import items\n"
                "def register(app):\n    app.include_router(items.router, prefix='/v1')\n"
                "def create_app() -> FastAPI:\n    app = FastAPI()\n    register(app)\n    return app\n"
            ),
            "svc/main.py": "from svc.app import create_app\napp = create_app()\n",
        }
    )
    route = routes["api:GET /v1/items/{i}"]
    assert route["handler"] == "svc.items.get_item"
    assert route["app"] == "svc.main.app"
    assert route["router"] == "svc.items.router"
    assert route["tags"] == ["items"]


def test_router_subclass_loop_and_class_based_app() -> None:
    """A subclass of APIRouter is a router; ``for r in (a, b)`` includes each; ``self.app`` built in
    one method and used in another is one app."""
    routes = _routes(
        {
            "svc/base.py": "from fastapi import APIRouter\nclass MyRouter(APIRouter):\n    pass\n",
            "svc/a.py": (
                "from svc.base import MyRouter\nrouter = MyRouter(prefix='/a')\n"
                "@router.post('/')\ndef make(): ...\n"
            ),
            "svc/b.py": (
                "from svc.base import MyRouter\nrouter = MyRouter(prefix='/b')\n"
                "@router.delete('/x')\ndef drop(): ...\n"
            ),
            "svc/server.py": (
                "from fastapi import FastAPI\nfrom svc import a, b\n"
                "class Server:\n"
                "    def __init__(self):\n        self.app = FastAPI()\n        self._routes()\n"
                "    def _routes(self):\n"
                "        for r in (a.router, b.router):\n"
                "            self.app.include_router(r, prefix='/api')\n"
            ),
        }
    )
    assert set(routes) == {"api:POST /api/a/", "api:DELETE /api/b/x"}
    assert routes["api:POST /api/a/"]["app"] == "svc.server.Server.__init__.self.app"


def test_response_models_status_codes_and_shapes() -> None:
    """Explicit ``response_model`` wins (even ``None``); else the return annotation, unwrapped from
    ``Optional``/``list``; a ``Response`` return means none; status constants become ints."""
    routes = _routes(
        {
            "svc/schemas.py": "from pydantic import BaseModel\nclass Out(BaseModel):\n    x: int\n",
            "svc/main.py": (
                "from typing import Optional\nfrom fastapi import FastAPI, status\n"
                "from fastapi.responses import JSONResponse\nfrom svc.schemas import Out\n"
                "app = FastAPI()\n"
                "@app.get('/a')\ndef a() -> Optional[Out]: ...\n"
                "@app.get('/b', response_model=None)\ndef b() -> Out: ...\n"
                "@app.get('/c')\ndef c() -> JSONResponse: ...\n"
                "@app.post('/d', status_code=status.HTTP_201_CREATED, response_model=list[Out])\n"
                "def d(): ...\n"
                "@app.get('/e')\ndef e() -> dict[str, Out]: ...\n"
            ),
        }
    )
    assert routes["api:GET /a"]["response_model"] == "svc.schemas.Out"
    assert "response_model_shape" not in routes["api:GET /a"]
    assert routes["api:GET /b"]["response_model"] is None
    assert routes["api:GET /c"]["response_model"] is None
    assert (routes["api:POST /d"]["response_model"], routes["api:POST /d"]["response_model_shape"]) == (
        "svc.schemas.Out",
        "list",
    )
    assert routes["api:POST /d"]["status_code"] == 201
    assert routes["api:GET /e"]["response_model_shape"] == "dict"


def test_api_route_methods_websocket_and_conditional() -> None:
    """``api_route(methods=...)`` and ``add_api_route`` yield one route per method; websockets are
    ``WEBSOCKET`` with no tags; a route registered under ``if`` without ``else`` is flagged."""
    routes = _routes(
        {
            "svc/main.py": (
                "from fastapi import FastAPI\nDEBUG = False\n"
                "app = FastAPI()\n"
                "@app.api_route('/m', methods=['GET', 'post'])\ndef m(): ...\n"
                "def h(): ...\napp.add_api_route('/h', h, methods=['PUT', 'PATCH'])\n"
                "@app.websocket('/ws')\nasync def ws(sock): ...\n"
                "if DEBUG:\n    @app.get('/debug')\n    def debug(): ...\n"
            ),
        }
    )
    assert set(routes) == {
        "api:GET /m",
        "api:POST /m",
        "api:PUT /h",
        "api:PATCH /h",
        "api:WEBSOCKET /ws",
        "api:GET /debug",
    }
    assert routes["api:WEBSOCKET /ws"]["tags"] == []
    assert routes["api:GET /debug"]["conditional"] is True
    assert "conditional" not in routes["api:GET /m"]


def test_gaps_dynamic_prefix_orphan_router_and_duplicates() -> None:
    """A prefix that cannot be evaluated skips the include with a gap; a router no app includes
    keeps its routes (``app`` null) with a gap; the second (method, path) is a gap, the first wins."""
    files = {
        "svc/orphan.py": (
            "from fastapi import APIRouter\nrouter = APIRouter(prefix='/o')\n"
            "@router.get('/x')\ndef x(): ...\n"
        ),
        "svc/hidden.py": (
            "from fastapi import APIRouter\nrouter = APIRouter()\n@router.get('/y')\ndef y(): ...\n"
        ),
        "svc/main.py": (
            "import os\nfrom fastapi import FastAPI\nfrom svc import hidden\n"
            "app = FastAPI()\napp.include_router(hidden.router, prefix=os.environ['P'])\n"
            "@app.get('/dup')\ndef first(): ...\n@app.get('/dup')\ndef second(): ...\n"
        ),
    }
    routes = _routes(files)
    assert routes["api:GET /o/x"]["app"] is None
    assert routes["api:GET /dup"]["handler"] == "svc.main.first"
    assert not any(key.endswith("/y") for key in routes)
    assert _gaps(files) == {
        ("svc/main.py", "dynamic_prefix"),
        ("svc/main.py", "duplicate_route"),
        ("svc/orphan.py", "router_not_included"),
    }


def test_prefix_from_settings_instance_is_grounded_on_the_constant() -> None:
    """``settings.API_PREFIX`` reads the class-level default of the settings class, and the route
    is grounded on that class (role ``constant``) so a change of the prefix changes its identity."""
    extraction = _extract(
        {
            "svc/config.py": "class Settings:\n    API_PREFIX: str = '/api'\nsettings = Settings()\n",
            "svc/main.py": (
                "from fastapi import FastAPI, APIRouter\nfrom svc.config import settings\n"
                "router = APIRouter()\n@router.get('/ping')\ndef ping(): ...\n"
                "app = FastAPI()\napp.include_router(router, prefix=f'{settings.API_PREFIX}/v2')\n"
            ),
        }
    )
    (draft,) = extraction.drafts
    assert draft.logical_key == "api:GET /api/v2/ping"
    roles = {(g.path, g.role) for g in draft.grounding}
    assert ("svc/config.py", "constant") in roles
    assert {("svc/main.py", "handler"), ("svc/main.py", "include"), ("svc/main.py", "router")} <= roles


def test_resolution_is_deterministic() -> None:
    """Resolving the same program twice yields identical drafts and gaps."""
    files = {
        "svc/main.py": (
            "from fastapi import FastAPI\napp = FastAPI()\n"
            "@app.get('/a')\ndef a(): ...\n@app.get('/a')\ndef b(): ...\n"
        )
    }
    assert _extract(files) == _extract(files)


def test_files_without_routing_have_no_facts() -> None:
    """The prefilter keeps unrelated files out of the per-blob cache (None facts)."""
    program = program_from_files({"svc/__init__.py": "", "svc/util.py": "def add(a, b):\n    return a + b\n"})
    assert all("api_routes" not in source.facts for source in program.files.values())


CYCLIC_FACTORIES = """from fastapi import APIRouter, FastAPI


def f1(r):
    return f2(r).router if r else f3(r).router


def f2(r):
    return f3(r).router if r else f1(r).router


def f3(r):
    return f1(r).router if r else f2(r).router


def g(a, b, c):
    f1(a); f2(b); f3(c)
    g(b, c, a)
    g(c, a, b)
    g(a.router, b.router, c.router)
    return a


router = g(f1(APIRouter()), f2(APIRouter()), f3(APIRouter()))
app = FastAPI()
app.include_router(g(router, router, router), prefix="/p")


@router.get("/x")
def x() -> int:
    return 1
"""


@pytest.mark.timeout(60)
def test_factories_and_parameters_bound_in_cycles_end_quickly() -> None:
    """Factories that return each other's results and parameters passed around in a cycle (the
    shape that made resolution exponential on a real service, fidesops 1.8.2) end in well under
    a second: a name already being resolved at a place is a cycle, and answers are remembered.
    Nothing is guessed: the router's identity is not static, so no route is made up."""
    extraction = _extract({"svc/app.py": CYCLIC_FACTORIES})
    assert all(d.logical_key.startswith("api:GET /") for d in extraction.drafts)
