"""The ``event_handlers`` extractor on small programs: recognition, resolution, grounding, gaps.

Programs are built from source text with ``tests.programs`` (real collectors, facts round-tripped
through the cache encoding), so these pin the behaviour the Tier-1 oracle exercises end to end.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from kb_assets.core.extractors.base import Extraction
from kb_assets.core.extractors.event_facts import collect_events
from kb_assets.core.extractors.event_handlers import EventHandlersExtractor
from kb_assets.core.program import Program
from kb_assets.core.spans import parse_source
from tests.programs import program_from_files

EXTRACTOR = EventHandlersExtractor()


def _run(files: Mapping[str, str]) -> tuple[Program, Extraction]:
    program = program_from_files(files)
    return program, EXTRACTOR.resolve(program)


def _registrations(extraction: Extraction) -> dict[str, list[tuple[str, str, str, str]]]:
    """Handler -> its registrations as (framework, event, target, site)."""
    return {
        str(d.payload["handler"]): [
            (r["framework"], r["event"], r["target"], r["site"]) for r in d.payload["registrations"]
        ]
        for d in extraction.drafts
    }


def _grounding(program: Program, extraction: Extraction, handler: str) -> list[tuple[str, str, str]]:
    """(path, role, fq_symbol_path) of each grounding edge of one handler's draft."""
    draft = next(d for d in extraction.drafts if d.payload["handler"] == handler)
    out = []
    for g in draft.grounding:
        span = next(s for s in program.files[g.path].spans if s.span_id == g.span_id)
        out.append((g.path, g.role, span.fq_symbol_path))
    return sorted(out)


def _gaps(extraction: Extraction) -> list[tuple[str, str, int | None]]:
    return [(g.path, g.reason, g.line) for g in extraction.gaps]


THREE_FILES = {
    "app/__init__.py": "",
    "app/handlers.py": "def audit(mapper, connection, target):\n    pass\n",
    "app/models.py": "class Base:\n    pass\n\n\nclass User(Base):\n    pass\n",
    "app/wiring.py": (
        "from sqlalchemy import event\n"
        "from app.handlers import audit\n"
        "from app.models import User\n"
        "\n"
        'event.listen(User, "before_insert", audit)\n'
    ),
}


def test_call_form_across_three_files_is_grounded_on_each() -> None:
    """``event.listen(User, "before_insert", audit)`` with the handler, the target class and the
    call in three files: both names resolve through the symbol table, and the artifact is grounded
    on the handler, the target class, both import statements and the registering module."""
    program, extraction = _run(THREE_FILES)
    assert _registrations(extraction) == {
        "app.handlers.audit": [("sqlalchemy", "before_insert", "app.models.User", "call:app.wiring")]
    }
    assert _grounding(program, extraction, "app.handlers.audit") == [
        ("app/handlers.py", "handler", "audit"),
        ("app/models.py", "target", "User"),
        ("app/wiring.py", "import", "<import:app.handlers>"),
        ("app/wiring.py", "import", "<import:app.models>"),
        ("app/wiring.py", "registration", "<module>"),
    ]
    assert extraction.drafts[0].logical_key == "event:app.handlers.audit"
    assert extraction.gaps == ()


def test_every_spelling_of_listen_is_recognized_and_registrations_merge() -> None:
    """``from sqlalchemy.event import listen``, ``sa.event.listen`` and ``@event.listens_for`` all
    register the same handler: one artifact, registrations sorted and de-duplicated."""
    files = dict(THREE_FILES)
    files["app/more.py"] = (
        "import sqlalchemy as sa\n"
        "from sqlalchemy.event import listen\n"
        "from app.handlers import audit\n"
        "from app.models import User\n"
        'listen(User, "after_update", audit)\n'
        'sa.event.listen(User, "after_insert", audit)\n'
        'sa.event.listen(User, "after_insert", audit)\n'
    )
    _, extraction = _run(files)
    assert _registrations(extraction)["app.handlers.audit"] == [
        ("sqlalchemy", "after_insert", "app.models.User", "call:app.more"),
        ("sqlalchemy", "after_update", "app.models.User", "call:app.more"),
        ("sqlalchemy", "before_insert", "app.models.User", "call:app.wiring"),
    ]


def test_lookalikes_are_not_event_handlers() -> None:
    """Recognition is by resolution, not spelling: ``sock.listen``, another library's ``listen``,
    attrs' ``@x.validator`` and a non-FastAPI ``on_event("message")`` yield nothing, not even gaps."""
    _, extraction = _run(
        {
            "m.py": (
                "import attr\n"
                "from socketlib import listen\n"
                "listen(8080, 'tcp', print)\n"
                "def serve(sock):\n"
                "    sock.listen(5)\n"
                "@attr.s\n"
                "class P:\n"
                "    x = attr.ib()\n"
                "    @x.validator\n"
                "    def check(self, attribute, value):\n"
                "        pass\n"
                "bus = object()\n"
                "@bus.on_event('message')\n"
                "def on_message():\n"
                "    pass\n"
            )
        }
    )
    assert extraction.drafts == ()
    assert extraction.gaps == ()


def test_a_name_rebound_later_means_its_binding_at_the_decorator() -> None:
    """Module and class bodies run top to bottom: ``Session`` above ``Session = sessionmaker()``
    is SQLAlchemy's class, below it the module's own variable (grounded on its assignment)."""
    program, extraction = _run(
        {
            "db.py": (
                "from sqlalchemy import event\n"
                "from sqlalchemy.orm import Session, sessionmaker\n"
                "@event.listens_for(Session, 'before_flush')\n"
                "def early(session, ctx, instances):\n"
                "    pass\n"
                "Session = sessionmaker()\n"
                "@event.listens_for(Session, 'after_commit')\n"
                "def late(session):\n"
                "    pass\n"
                "def later():\n"
                "    @event.listens_for(Session, 'after_begin')\n"
                "    def inner(session, transaction, connection):\n"
                "        pass\n"
            )
        }
    )
    targets = {h: regs[0][2] for h, regs in _registrations(extraction).items()}
    assert targets == {
        "db.early": "sqlalchemy.orm.Session",
        "db.late": "db.Session",
        "db.later.inner": "db.Session",  # a function body runs later: the final binding
    }
    assert ("db.py", "target", "Session") in _grounding(program, extraction, "db.late")


def test_sqlalchemy_targets_attribute_engine_and_unfollowable_members() -> None:
    """A class attribute (``User.email``), a module variable (``engine``), an external class and a
    member the table cannot follow (``Base.metadata``) are all named, first-party ones grounded."""
    program, extraction = _run(
        {
            "models.py": "class User:\n    email = None\nBase = object()\n",
            "db.py": (
                "from sqlalchemy import create_engine, event\n"
                "from sqlalchemy.engine import Engine\n"
                "from models import Base, User\n"
                "engine = create_engine('sqlite://')\n"
                "@event.listens_for(User.email, 'set')\n"
                "def lower(target, value, old, initiator):\n"
                "    pass\n"
                "@event.listens_for(engine, 'connect')\n"
                "def pragma(conn, record):\n"
                "    pass\n"
                "@event.listens_for(Engine, 'before_cursor_execute')\n"
                "def trace(*args):\n"
                "    pass\n"
                "@event.listens_for(Base.metadata, 'after_create')\n"
                "def seed(target, connection, **kw):\n"
                "    pass\n"
            ),
        }
    )
    targets = {h: regs[0][2] for h, regs in _registrations(extraction).items()}
    assert targets == {
        "db.lower": "models.User.email",
        "db.pragma": "db.engine",
        "db.trace": "sqlalchemy.engine.Engine",
        "db.seed": "models.Base.metadata",
    }
    assert ("models.py", "target", "User") in _grounding(program, extraction, "db.lower")
    assert ("models.py", "target", "Base") in _grounding(program, extraction, "db.seed")


VALIDATORS = {
    "schemas.py": (
        "import pydantic as pd\n"
        "from pydantic import BaseModel, field_validator, model_validator\n"
        "from pydantic.functional_validators import field_validator as fv_module\n"
        "from pydantic.v1 import root_validator, validator\n"
        "MODE = 'before'\n"
        "class A(BaseModel):\n"
        "    @field_validator('x', 'y', mode='wrap')\n"
        "    def f1(cls, v, handler):\n"
        "        return v\n"
        "    @pd.field_validator('z')\n"
        "    def f2(cls, v):\n"
        "        return v\n"
        "    @model_validator(mode='before')\n"
        "    def m1(cls, data):\n"
        "        return data\n"
        "    @model_validator(mode=MODE)\n"
        "    def m2(cls, data):\n"
        "        return data\n"
        "    @validator('x', pre=True, always=True)\n"
        "    def v1(cls, v):\n"
        "        return v\n"
        "    @root_validator\n"
        "    def r1(cls, values):\n"
        "        return values\n"
        "    @root_validator(pre=True)\n"
        "    def r2(cls, values):\n"
        "        return values\n"
        "    class Inner(BaseModel):\n"
        "        @field_validator('w')\n"
        "        def f3(cls, v):\n"
        "            return v\n"
    )
}


def test_validator_events_spell_kind_fields_and_mode() -> None:
    """Each validator kind becomes its event string (fields in written order, non-default modes
    spelled out), through ``pd.`` and ``pydantic.v1`` spellings and nested classes alike; a
    non-literal mode is a ``dynamic_event`` gap."""
    _, extraction = _run(VALIDATORS)
    events = {h: regs[0][1] for h, regs in _registrations(extraction).items()}
    assert events == {
        "schemas.A.f1": "field_validator:x,y:wrap",
        "schemas.A.f2": "field_validator:z",
        "schemas.A.m1": "model_validator:before",
        "schemas.A.v1": "validator:x:pre",
        "schemas.A.r1": "root_validator:post",
        "schemas.A.r2": "root_validator:pre",
        "schemas.A.Inner.f3": "field_validator:w",
    }
    assert _registrations(extraction)["schemas.A.Inner.f3"][0][2] == "schemas.A.Inner"
    assert _gaps(extraction) == [("schemas.py", "dynamic_event", 16)]


def test_fastapi_apps_by_subclass_annotation_import_and_router_attribute() -> None:
    """An app is a variable assigned ``FastAPI()``, a first-party subclass of it, or annotated
    ``FastAPI``; an app imported from another module is grounded there; ``app.router.
    lifespan_context = fn`` registers a lifespan; ``startup`` on a non-app is a gap."""
    program, extraction = _run(
        {
            "web/__init__.py": "",
            "web/base.py": "from fastapi import FastAPI\nclass ShopApp(FastAPI):\n    pass\n",
            "web/main.py": (
                "from fastapi import FastAPI\n"
                "from web.base import ShopApp\n"
                "from web.factory import build\n"
                "app = ShopApp()\n"
                "other: FastAPI = build()\n"
                "unknown = build()\n"
                "async def span(app):\n"
                "    yield\n"
                "app.router.lifespan_context = span\n"
            ),
            "web/factory.py": "def build():\n    pass\n",
            "web/hooks.py": (
                "from web.main import app, other, unknown\n"
                "@app.on_event('startup')\n"
                "async def a():\n"
                "    pass\n"
                "@other.on_event('shutdown')\n"
                "async def b():\n"
                "    pass\n"
                "@unknown.on_event('startup')\n"
                "async def c():\n"
                "    pass\n"
            ),
        }
    )
    assert _registrations(extraction) == {
        "web.hooks.a": [("fastapi", "startup", "web.main.app", "decorator:web.hooks")],
        "web.hooks.b": [("fastapi", "shutdown", "web.main.other", "decorator:web.hooks")],
        "web.main.span": [("fastapi", "lifespan", "web.main.app", "assignment:web.main")],
    }
    assert ("web/main.py", "target", "app") in _grounding(program, extraction, "web.hooks.a")
    assert _gaps(extraction) == [("web/hooks.py", "unresolved_app", 8)]


def test_factory_locals_nested_defs_and_local_imports() -> None:
    """Inside an app factory the local ``app = FastAPI()`` is the target (on the factory's span),
    a nested def passed to ``add_event_handler`` is the handler, and a function-local import of a
    validator is recognized."""
    program, extraction = _run(
        {
            "main.py": (
                "def create_app():\n"
                "    from fastapi import FastAPI\n"
                "    app = FastAPI()\n"
                "    async def startup():\n"
                "        pass\n"
                "    app.add_event_handler('startup', startup)\n"
                "    return app\n"
                "def test_model():\n"
                "    from pydantic import BaseModel, field_validator\n"
                "    class M(BaseModel):\n"
                "        @field_validator('a')\n"
                "        def check(cls, v):\n"
                "            return v\n"
            )
        }
    )
    assert _registrations(extraction) == {
        "main.create_app.startup": [("fastapi", "startup", "main.create_app.app", "call:main")],
        "main.test_model.M.check": [("pydantic", "field_validator:a", "main.test_model.M", "decorator:main")],
    }
    assert _grounding(program, extraction, "main.create_app.startup") == [
        ("main.py", "handler", "create_app.startup"),
        ("main.py", "registration", "create_app"),
        ("main.py", "target", "create_app"),
    ]


def test_known_gaps_are_recorded_with_their_lines() -> None:
    """``listen`` in a function body, a lambda listener, a non-literal event, a target that is a
    parameter and an unresolvable handler are gaps at their lines; none becomes an artifact."""
    _, extraction = _run(
        {
            "w.py": (
                "from sqlalchemy import event\n"
                "from models import User, log\n"
                "def setup(engine):\n"
                "    event.listen(User, 'before_insert', log)\n"
                "    @event.listens_for(engine, 'connect')\n"
                "    def on_connect(conn, record):\n"
                "        pass\n"
                "event.listen(User, 'after_insert', lambda *a: None)\n"
                "event.listen(User, NAME, log)\n"
                "event.listen(User, 'after_update', make_handler())\n"
            ),
            "models.py": "class User:\n    pass\ndef log(*args):\n    pass\n",
        }
    )
    assert extraction.drafts == ()
    assert _gaps(extraction) == [
        ("w.py", "listen_in_function", 4),
        ("w.py", "unresolved_target", 5),
        ("w.py", "lambda_listener", 8),
        ("w.py", "dynamic_event", 9),
        ("w.py", "unresolved_handler", 10),
    ]


def test_payload_is_location_free_and_resolution_deterministic() -> None:
    """Blank lines and comments above a registration change no payload and no grounding span id,
    and resolving the same program twice yields identical drafts."""
    _, first = _run(THREE_FILES)
    shifted = {p: ("# moved\n\n\n" + text if text else text) for p, text in THREE_FILES.items()}
    program, second = _run(shifted)
    assert [d.payload for d in first.drafts] == [d.payload for d in second.drafts]
    assert [d.grounding for d in first.drafts] == [d.grounding for d in second.drafts]
    assert EXTRACTOR.resolve(program) == second
    assert "line" not in json.dumps([d.payload for d in second.drafts])


def test_collect_skips_files_without_candidates_and_stays_json() -> None:
    """A blob that cannot hold a registration yields no facts at all; one that does yields JSON
    that survives a round trip unchanged."""
    plain, _ = parse_source(b"def f():\n    return validators_list\n")
    assert plain is not None
    assert collect_events(plain) is None
    source, _ = parse_source(b"def f(app):\n    app.add_event_handler('startup', g)\n")
    assert source is not None
    facts = collect_events(source)
    assert facts is not None
    assert json.loads(json.dumps(facts)) == facts
    assert facts["locals"] == {"f": {"app": None}}
