"""Unit tests of the call graph (``call_edge``): facts, scoping, class hierarchies, values, rendering.

Programs are built from source text with ``tests.programs`` (the real collectors and module map), so
each test pins one resolution rule in milliseconds; ``test_calls_oracle`` covers the whole pipeline.
"""

from __future__ import annotations

import gc
from collections.abc import Mapping

from kb_assets.core.callgraph.graph import CallGraph, build
from kb_assets.core.collector import paused_gc
from kb_assets.core.extractors.base import LocatedGrounding
from kb_assets.core.extractors.calls import CallsExtractor
from kb_assets.core.grounding import build_artifacts
from kb_assets.core.program import Program
from tests.programs import program_from_files


def _graph(files: Mapping[str, str]) -> tuple[Program, CallGraph]:
    program = program_from_files(files)
    return program, build(program)


def _edges(files: Mapping[str, str]) -> set[tuple[str, str]]:
    return set(_graph(files)[1].edges)


def _externals(files: Mapping[str, str], caller: str) -> set[str]:
    return {site.name for site in _graph(files)[1].externals.get(caller, [])}


def test_facts_record_offsets_decorators_main_guard_and_arguments() -> None:
    """Call sites are stored per scope with line offsets from the scope span's first line (a decorated
    function's span starts at its decorator); a decorator is
    a site of the enclosing scope passing the definition; ``__main__`` sites and name arguments are
    marked; an ``open`` mode literal is kept."""
    program = program_from_files(
        {
            "m.py": "import x\n\n@x.deco\ndef f(cb):\n    run(cb, key=g)\n    open(p, 'w')\n\n"
            "if __name__ == '__main__':\n    f(None)\n"
        }
    )
    scopes = program.files["m.py"].facts["calls"]["scopes"]
    module, function = scopes[0], scopes[1]
    assert ["x.deco", 2, {"d": 1, "a": ["#1"]}] in module["calls"]
    assert ["f", 8, {"m": 1}] in module["calls"]
    assert function["calls"] == [
        ["run", 2, {"a": ["cb"], "k": {"key": "g"}}],
        ["open", 3, {"a": ["p"], "mode": "w"}],
    ]
    assert function["params"] == ["cb"]


def test_class_body_names_are_invisible_in_methods_and_locals_shadow_globals() -> None:
    """Python's scoping: a method's bare name skips the class body; parameters, loop targets,
    lambda parameters and local definitions shadow module names; ``global`` reaches the module."""
    edges = _edges(
        {
            "m.py": "def helper(): pass\n"
            "class C:\n    def helper(self): pass\n    def m(self):\n        helper()\n"
            "def shadow(helper):\n    helper()\n"
            "def loop(xs):\n    for helper in xs:\n        helper()\n"
            "def lam():\n    return lambda helper: helper()\n"
            "def local():\n    def helper(): pass\n    helper()\n"
            "def glob():\n    global helper\n    helper = helper\n    helper()\n"
        }
    )
    assert ("m.C.m", "m.helper") in edges
    assert ("m.C.m", "m.C.helper") not in edges
    assert not {e for e in edges if e[0] in ("m.shadow", "m.loop", "m.lam")}
    assert ("m.local", "m.local.helper") in edges
    assert ("m.local", "m.helper") not in edges
    assert ("m.glob", "m.helper") in edges


def test_c3_order_super_and_opaque_bases() -> None:
    """Methods resolve through the C3 order (a diamond picks the left branch, ``super()`` walks on
    to the next class); an external base hides what it may define, so no edge is guessed past it,
    while ``typing.Generic`` is transparent."""
    edges = _edges(
        {
            "m.py": "import typing\nfrom ext import Mixin\n"
            "class A:\n    def who(self): pass\n    def only_a(self): pass\n"
            "class B(A):\n    def who(self):\n        super().who()\n"
            "class C(A):\n    def who(self):\n        super().who()\n"
            "class D(B, C):\n    def run(self):\n        self.who()\n"
            "class E(Mixin, A):\n    def run(self):\n        self.only_a()\n"
            "class F(typing.Generic, A):\n    def run(self):\n        self.only_a()\n"
        }
    )
    assert ("m.D.run", "m.B.who") in edges
    assert ("m.D.run", "m.C.who") not in edges
    assert ("m.B.who", "m.A.who") in edges
    assert ("m.C.who", "m.A.who") in edges
    assert ("m.E.run", "m.A.only_a") not in edges
    assert ("m.F.run", "m.A.only_a") in edges


def test_instantiation_init_properties_and_classmethod_receivers() -> None:
    """Calling a class is an edge to it and to the ``__init__`` it inherits; a property read through
    a call is no edge; a classmethod called on a subclass returns that subclass."""
    edges = _edges(
        {
            "m.py": "class Base:\n    def __init__(self): pass\n    @classmethod\n    def make(cls):\n"
            "        return cls()\n    def save(self): pass\n    @property\n    def prop(self): pass\n"
            "class Sub(Base):\n    def save(self): pass\n"
            "def f():\n    s = Sub.make()\n    s.save()\n    Sub().prop()\n"
        }
    )
    assert {
        ("m.f", "m.Sub"),
        ("m.f", "m.Base.__init__"),
        ("m.f", "m.Base.make"),
        ("m.f", "m.Sub.save"),
    } <= edges
    assert ("m.f", "m.Base.save") not in edges
    assert ("m.f", "m.Base.prop") not in edges


def test_branches_give_every_alternative_and_unknowns_give_nothing() -> None:
    """A name bound to different functions on different branches calls each of them; as soon as one
    binding is unknown (here: what an unknown call returns), the call resolves to nothing."""
    edges = _edges(
        {
            "m.py": "def a(): pass\ndef b(): pass\n"
            "def both(flag):\n    if flag:\n        f = a\n    else:\n        f = b\n    f()\n"
            "def unsure(flag):\n    f = a\n    if flag:\n        f = pick()\n    f()\n"
        }
    )
    assert {("m.both", "m.a"), ("m.both", "m.b")} <= edges
    assert not {e for e in edges if e[0] == "m.unsure"}


def test_passed_returned_and_forwarded_functions() -> None:
    """A function passed as an argument is called by the function that calls the parameter (also
    through a forwarding parameter and a decorator's wrapper); a returned function is called by
    whoever calls the result."""
    edges = _edges(
        {
            "m.py": "def cb(): pass\ndef run(f):\n    f()\ndef later(g):\n    run(g)\n"
            "def deco(fn):\n    def wrapper():\n        return fn()\n    return wrapper\n"
            "@deco\ndef task(): pass\n"
            "def make():\n    return cb\n"
            "def main():\n    later(cb)\n    make()()\n"
        }
    )
    assert {("m.run", "m.cb"), ("m.deco.wrapper", "m.task"), ("m.main", "m.cb"), ("m", "m.deco")} <= edges


def test_functions_forwarded_in_a_cycle_and_never_called_make_no_edge() -> None:
    """Parameters forwarded into each other in a cycle, one of them called: a function passed
    into any parameter of the cycle is called by the caller of that one parameter, however it
    entered; a function passed only into parameters that reach no call is called by nobody
    (``passing._reaching``: only parameters a call can be reached from are matched)."""
    edges = _edges(
        {
            "m.py": "def cb(): pass\ndef other(): pass\ndef idle(): pass\n"
            "def ping(f, n):\n    pong(f, n)\ndef pong(g, n):\n    g()\n    ping(g, n)\n"
            "def keep(h):\n    store(h)\ndef store(k):\n    return k\n"
            "def main():\n    ping(cb, 1)\n    pong(other, 2)\n    keep(idle)\n"
        }
    )
    assert {("m.pong", "m.cb"), ("m.pong", "m.other")} <= edges
    assert not {e for e in edges if e[1] == "m.idle" and e[0] != "m.main"}
    assert ("m.main", "m.idle") not in edges  # passed, not called


def test_typed_receivers_reach_external_sinks() -> None:
    """External calls are kept per caller with their dotted names, typed through annotations,
    instance attributes and known factories (``sessionmaker()()`` is a SQLAlchemy ``Session``)."""
    files = {
        "db.py": "from sqlalchemy.orm import sessionmaker, Session\nLocal = sessionmaker()\n"
        "class Repo:\n    def __init__(self, db: Session):\n        self.db = db\n"
        "    def save(self, x):\n        self.db.add(x)\n"
        "def direct():\n    s = Local()\n    s.commit()\n    with Session() as t:\n        t.flush()\n",
        "web.py": "import requests\ndef call():\n    requests.Session().post('u')\n",
    }
    assert _externals(files, "db.Repo.save") == {"sqlalchemy.orm.Session.add"}
    assert {"sqlalchemy.orm.Session.commit", "sqlalchemy.orm.Session.flush"} <= _externals(files, "db.direct")
    assert "requests.Session.post" in _externals(files, "web.call")


def test_dynamic_calls_are_gaps() -> None:
    """``getattr(...)()``, ``eval`` and ``exec`` become ``dynamic_call`` gaps, never edges."""
    _, graph = _graph({"m.py": "def f(o):\n    getattr(o, 'x')()\n    eval('g()')\n    exec('h()')\n"})
    assert [(g.reason, g.line) for g in graph.gaps] == [
        ("dynamic_call", 2),
        ("dynamic_call", 3),
        ("dynamic_call", 4),
    ]
    assert not graph.edges


def test_render_lines_follow_the_caller_and_ids_survive_moves() -> None:
    """``lines`` are rendered from offsets and the caller span's start line, so inserting lines
    above a caller changes its lines but not the artifact's identity; the grounding names the
    caller, the callee and the import the resolution followed (``via``)."""
    base = {"lib.py": "def g(): pass\n", "m.py": "from lib import g\n\ndef f():\n    g()\n    g()\n"}
    moved = {**base, "m.py": "from lib import g\n\n\n\ndef f():\n    g()\n    g()\n"}
    ids, lines = [], []
    for files in (base, moved):
        program = program_from_files(files)
        extraction = CallsExtractor().resolve(program)
        (art,) = build_artifacts(
            extraction.drafts, extractor_id="calls", extractor_version="1", program=program
        )
        located = [
            LocatedGrounding(g.span_id, g.path, g.role, *_lines(program, g.path, g.span_id))
            for g in art.grounding
        ]
        ids.append(art.artifact_id)
        lines.append(CallsExtractor().render(art.payload, located)["lines"])
        assert sorted(g.role for g in art.grounding) == ["callee", "caller", "via"]
    assert ids[0] == ids[1]
    assert lines == [[4, 5], [6, 7]]


def _lines(program: Program, path: str, span_id: str) -> tuple[int, int]:
    span = next(s for s in program.files[path].spans if s.span_id == span_id)
    return span.start_line, span.end_line


def test_resolution_is_deterministic() -> None:
    """Resolving the same program twice yields identical drafts, in the same order."""
    files = {
        "m.py": "class A:\n    def f(self):\n        self.g()\n    def g(self): pass\ndef h():\n    A().f()\n"
    }
    program = program_from_files(files)
    first, second = CallsExtractor().resolve(program), CallsExtractor().resolve(program)
    assert list(first.drafts) == list(second.drafts)
    assert first.gaps == second.gaps


def test_callees_are_each_callers_edges_in_callee_order() -> None:
    """``callees`` (the process paths' search order) lists a caller's edges sorted by callee,
    whatever order the graph found them in, and nothing for a node that calls nothing."""
    _, graph = _graph(
        {
            "m.py": "def z(): pass\ndef a(): pass\ndef m(): pass\n"
            "def run():\n    z()\n    m()\n    a()\n    z()\n"
            "def other():\n    m()\n",
        }
    )
    assert [e.callee.dotted for e in graph.callees("m.run")] == ["m.a", "m.m", "m.z"]
    assert [e.callee.dotted for e in graph.callees("m.other")] == ["m.m"]
    assert graph.callees("m.a") == []
    for caller in {key[0] for key in graph.edges}:
        assert graph.callees(caller) == [graph.edges[k] for k in sorted(graph.edges) if k[0] == caller]


def test_a_parameter_is_only_called_where_it_is_bound() -> None:
    """A parameter called in its own function (or a closure) calls what callers pass in; one that
    escapes — returned by a registration helper, then called by the module — holds whatever that
    one call passed, so no argument of any other call may become the module's callee. A class handed
    to its decorator is not called by the decorator's wrapper either."""
    edges = _edges(
        {
            "m.py": "def tag(name=None, fn=None):\n"
            "    if fn is None:\n"
            "        def dec(f):\n            return tag(name, f)\n"
            "        return dec\n"
            "    return fn\n"
            "def other(): pass\n"
            "tag('y', other)\n"
            "@tag('x')\n"
            "def handler(): pass\n"
            "def wraps(func):\n"
            "    def inner(*a):\n        return func(*a)\n"
            "    return inner\n"
            "@wraps\n"
            "class Decorated: pass\n"
            "@wraps\n"
            "def view(): pass\n"
        }
    )
    assert ("m", "m.other") not in edges
    assert ("m", "m.handler") not in edges
    assert ("m.wraps.inner", "m.view") in edges
    assert ("m.wraps.inner", "m.Decorated") not in edges


def test_a_caller_defined_twice_keeps_the_sites_of_both_definitions() -> None:
    """Two ``def f`` in one module are one dotted caller: the edge keeps the sites of each definition
    (grounded on both spans, offsets per span) and renders every line."""
    source = "def g(): pass\n\ndef f():\n    g()\n\ndef f():\n    pass\n    g()\n"
    program = program_from_files({"m.py": source})
    (draft,) = CallsExtractor().resolve(program).drafts
    spans = {s.span_id: s.start_line for s in program.files["m.py"].spans}
    callers = [g for g in draft.grounding if g.role == "caller"]
    assert len(callers) == 2
    offsets = draft.payload["site_offsets"]
    assert isinstance(offsets, dict)
    assert sorted(spans[sid] + off for sid, offs in offsets.items() for off in offs) == [4, 8]
    assert list(draft.grounding) == sorted(draft.grounding)


def test_what_outlives_the_paused_collector_lands_in_the_oldest_generation() -> None:
    """Objects made while the collector is paused are moved to the oldest generation on the way out
    (not walked as young objects), the collector runs again, and objects frozen by someone else stay
    frozen."""
    assert gc.isenabled()
    with paused_gc():
        assert not gc.isenabled()
        kept = [[i] for i in range(1000)]
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    assert id(kept) in oldest
    assert id(kept[0]) in oldest
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with paused_gc():
            pass
        assert gc.get_freeze_count() >= frozen
    finally:
        gc.unfreeze()
