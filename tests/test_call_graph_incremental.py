"""A call graph built from the last commit's resolutions is the graph a full build gives, and it
resolves only the files a change can reach.

Each edit below changes one way an answer in one file depends on another file: a function's
result, an inherited method, a module-level alias, an instance attribute, a star import's names
(through ``__all__``), a function passed as an argument, an import. The incremental graph is
compared with a full build of the same commit field by field and by artifact id, after each edit
on its own and after all of them in a row (each build from the one before: the resolutions an
incremental build records must hold for the next commit too). ``alpha.py`` is resolved before
``api.py`` and asks the same questions first: ``api.py`` gets memoized answers computed while
resolving another file, and must still learn which files they read.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping

import pytest

from kb_assets.core.callgraph import graph as graph_module
from kb_assets.core.callgraph import resolutions
from kb_assets.core.callgraph.graph import CallGraph, Edge, _build
from kb_assets.core.callgraph.resolutions import Resolutions
from kb_assets.core.program import Program
from tests.programs import program_from_files
from tests.test_call_graph_parts import _ids, _shape, edge_fields, own_code

NO_COPY = 10**9
"""A cut past every scope: these builds run in this process (the test process may have threads)."""

BASE: dict[str, str] = {
    "app/__init__.py": "",
    "app/models.py": (
        "class Base:\n    def save(self):\n        return 1\n\n"
        "class Order(Base):\n    def total(self):\n        return self.price()\n"
        "    def price(self):\n        return 2\n"
    ),
    "app/factory.py": "from app.models import Order\n\ndef make():\n    return Order()\n\nhandler = make\n",
    "app/api.py": (
        "from app.factory import make, handler\nfrom app.reexport import *\nfrom app import tools\n\n"
        "def checkout():\n    order = make()\n    order.save()\n    order.total()\n    handler()\n"
        "    helper()\n    other()\n    tools.run(make)\n\n"
        "class View:\n    def __init__(self):\n        self.order = make()\n"
        "    def get(self):\n        self.order.save()\n"
    ),
    "app/alpha.py": (
        "from app.factory import make, handler\nfrom app import tools\n\n"
        "def first():\n    make().total()\n    make().save()\n    handler()\n    tools.run(make)\n"
    ),
    "app/reexport.py": "from app.helpers import *\n",
    "app/helpers.py": "__all__ = ['helper']\n\ndef helper():\n    return 1\n\ndef other():\n    return 2\n",
    "app/tools.py": "from app import factory\n\ndef run(fn):\n    fn()\n    factory.make()\n",
    "app/unrelated.py": "def alone():\n    return len([])\n",
    "app/outside.py": "import ext\n\ndef reach():\n    ext.foo()\n",
    "app/waiting.py": (
        "from app.later import thing\nimport app.plugins.extra\nfrom ext.lib import tool\n\n"
        "def use():\n    thing()\n    app.plugins.extra.hook()\n    tool()\n"
    ),
}

EDITS: dict[str, dict[str, str]] = {
    "inherited method removed": {
        "app/models.py": BASE["app/models.py"].replace("def save(self)", "def store(self)"),
    },
    "result changes class": {
        "app/factory.py": BASE["app/factory.py"]
        .replace("return Order()", "return Base()")
        .replace("import Order", "import Order, Base"),
    },
    "alias rebound": {"app/factory.py": BASE["app/factory.py"].replace("handler = make", "handler = Order")},
    "star names grow": {
        "app/helpers.py": BASE["app/helpers.py"].replace("['helper']", "['helper', 'other']")
    },
    "star name renamed": {"app/helpers.py": BASE["app/helpers.py"].replace("helper", "assist")},
    "passed function called twice": {"app/tools.py": BASE["app/tools.py"].replace("fn()", "fn()\n    fn()")},
    "no passer left": {
        "app/api.py": BASE["app/api.py"].replace("    tools.run(make)\n", ""),
        "app/alpha.py": BASE["app/alpha.py"].replace("    tools.run(make)\n", ""),
    },
    "attribute type changes": {
        "app/api.py": BASE["app/api.py"].replace("self.order = make()", "self.order = tools")
    },
    "another function passed": {
        "app/api.py": BASE["app/api.py"].replace("tools.run(make)", "tools.run(helper)")
    },
    "one of two passers gone": {"app/api.py": BASE["app/api.py"].replace("    tools.run(make)\n", "")},
    "lines shift": {"app/models.py": "# a comment\n\n" + BASE["app/models.py"]},
    "unrelated body": {"app/unrelated.py": "def alone():\n    return max([1])\n"},
}


_programs: dict[str, Program] = {}
"""Every program made, by sha (an incremental build is compared with its base's graph)."""


def _program(files: Mapping[str, str], n: int) -> Program:
    program = _programs[f"{n:040x}"] = program_from_files(files, sha=f"{n:040x}")
    return program


_edges: dict[int, tuple[Resolutions, dict[tuple[str, str], Edge]]] = {}
"""The edges of the build that kept each resolutions (by the object's id): a watch's next build
takes most of them as they are (``reuse``); each is handed to one build only, as in a watch
(passed functions may add to an edge taken)."""


def _kept(program: Program) -> Resolutions:
    graph, resolutions = _build(program, NO_COPY, keep=True)
    assert resolutions is not None
    _edges[id(resolutions)] = (resolutions, graph.edges)
    return resolutions


def _prior(previous: Resolutions) -> dict[tuple[str, str], Edge] | None:
    kept = _edges.pop(id(previous), None)
    return kept[1] if kept is not None and kept[0] is previous else None


def _same_as_full(program: Program, previous: Resolutions) -> tuple[CallGraph, Resolutions]:
    """The incremental build of ``program`` and what it kept, checked against a full one, built
    both replaying every log and taking the previous build's unreachable edges (``reuse``, as a
    watch does); and every edge outside its ``changed`` keys is, field for field, an edge of the
    previous commit's graph (what the call-edge carry relies on to take that edge's remembered
    signature)."""
    prior = _prior(previous)
    incremental, kept = _build(program, NO_COPY, previous=previous, keep=True)
    full, _ = _build(program, NO_COPY)
    assert kept is not None
    assert _shape(incremental) == _shape(full)
    assert _ids(program, incremental) == _ids(program, full)
    if prior is not None:
        reusing, kept_reusing = _build(program, NO_COPY, previous=previous, keep=True, prior=prior)
        assert _shape(reusing) == _shape(full)
        assert _ids(program, reusing) == _ids(program, full)
        assert (reusing.resolved, reusing.changed) == (incremental.resolved, incremental.changed)
        assert kept_reusing is not None
        assert kept_reusing.logs.keys() == kept.logs.keys()
        incremental, kept = reusing, kept_reusing
    _edges[id(kept)] = (kept, incremental.edges)
    if incremental.since is not None:
        assert incremental.since == previous.sha
        before, _ = _build(_programs[previous.sha], NO_COPY)
        for key, edge in incremental.edges.items():
            if key not in incremental.changed:
                assert key in before.edges, key
                assert edge_fields(edge) == edge_fields(before.edges[key]), key
    return incremental, kept


@pytest.mark.parametrize("name", sorted(EDITS))
def test_one_edit_gives_the_full_graph(name: str) -> None:
    """After each kind of edit, the graph built from the base's resolutions is the full build's,
    and only files that read the edited one were resolved again."""
    base = _program(BASE, 1)
    edited = _program({**BASE, **EDITS[name]}, 2)
    graph, _ = _same_as_full(edited, _kept(base))
    assert graph.resolved is not None
    assert 1 <= graph.resolved < len(edited.files)


def test_an_unrelated_edit_resolves_one_file() -> None:
    """A file nobody reads is the only one resolved again."""
    base = _program(BASE, 1)
    edited = _program({**BASE, **EDITS["unrelated body"]}, 2)
    assert _same_as_full(edited, _kept(base))[0].resolved == 1


def test_edits_in_a_row_give_the_full_graph() -> None:
    """Each commit's graph built from the one before's: the recorded resolutions stay valid."""
    files = dict(BASE)
    previous = _kept(_program(files, 0))
    for n, name in enumerate(sorted(EDITS), start=1):
        files.update(EDITS[name])
        _, previous = _same_as_full(_program(files, n), previous)


FILE_EDITS: dict[str, dict[str, str | None]] = {
    "a module nobody names added": {"app/spare.py": "def more():\n    return 1\n"},
    "a missing module added": {"app/later.py": "def thing():\n    return 1\n"},
    "a namespace package appears": {"app/plugins/extra.py": "def hook():\n    return 1\n"},
    "a top-level package appears": {"ext/lib.py": "def tool():\n    return 1\n"},
    "a star-imported module removed": {"app/helpers.py": None},
    "an imported package member removed": {"app/tools.py": None},
    "a module no longer parsed": {"app/factory.py": "def broken(:\n"},
    "a module parsed again": {"app/factory.py": BASE["app/factory.py"]},
    "a module added and one removed": {
        "app/later.py": "def thing():\n    return 2\n",
        "app/unrelated.py": None,
    },
}
"""Commits that add or remove files (None: the file is deleted), each changing the module map."""

AFTER = {"a module parsed again": "a module no longer parsed"}
"""Edits made on top of another edit rather than on ``BASE``."""


def _applied(files: Mapping[str, str], edit: Mapping[str, str | None]) -> dict[str, str]:
    out = dict(files)
    for path, text in edit.items():
        if text is None:
            out.pop(path, None)
        else:
            out[path] = text
    return out


@pytest.mark.parametrize("name", sorted(FILE_EDITS))
def test_a_file_added_or_removed_gives_the_full_graph(name: str) -> None:
    """A file added, removed, no longer parsed or parsed again: the graph built from the base's
    resolutions is the full build's, though not every file was resolved again."""
    before = _applied(BASE, FILE_EDITS[AFTER[name]]) if name in AFTER else BASE
    base = _program(before, 1)
    edited = _program(_applied(before, FILE_EDITS[name]), 2)
    graph, _ = _same_as_full(edited, _kept(base))
    assert graph.resolved is not None
    assert 1 <= graph.resolved < len(edited.files)


def test_a_module_nobody_names_resolves_itself_only() -> None:
    """A new module whose name no file's facts hold is the only file resolved."""
    base = _program(BASE, 1)
    grown = _program(_applied(BASE, FILE_EDITS["a module nobody names added"]), 2)
    assert _same_as_full(grown, _kept(base))[0].resolved == 1


def test_files_added_and_removed_in_a_row_give_the_full_graph() -> None:
    """Each commit's graph built from the one before's, through added and removed files: the
    read sets of replayed files, rebased onto each commit's file list, stay valid."""
    files = dict(BASE)
    previous = _kept(_program(files, 0))
    for n, name in enumerate([*sorted(FILE_EDITS), *sorted(EDITS)], start=1):
        files = _applied(files, FILE_EDITS.get(name) or EDITS[name])
        _, previous = _same_as_full(_program(files, n), previous)


def test_read_sets_follow_the_file_list() -> None:
    """A file added before the others in path order moves every other file's bit: the replayed
    files' read sets are rebased, so the next commit's edit still reaches the files that read
    the edited one (an alias rebound in ``factory.py``, read by ``api.py`` and ``alpha.py``)."""
    files = dict(BASE)
    previous = _kept(_program(files, 1))
    files["app/aaa.py"] = "def first():\n    return 0\n"
    graph, previous = _same_as_full(_program(files, 2), previous)
    assert graph.resolved == 1
    files.update(EDITS["alias rebound"])
    graph, _ = _same_as_full(_program(files, 3), previous)
    assert graph.resolved is not None
    assert graph.resolved > 1


def test_names_a_module_map_change_can_answer_differently() -> None:
    """The last component of each module added or removed, and of each package prefix that comes
    or goes with it (namespace packages, top-level names), but not of prefixes that stay."""
    before = _program({"app/__init__.py": "", "app/a.py": "def f():\n    return 1\n"}, 1)
    previous = _kept(before)
    paths = {**before.module_map.paths, "app.sub.deep": "app/sub/deep.py", "ns.leaf": "ns/leaf.py"}
    grown = dataclasses.replace(
        before, sha="2" * 40, module_map=dataclasses.replace(before.module_map, paths=paths)
    )
    assert resolutions.looked_up_names(previous, grown) == {"deep", "sub", "leaf", "ns"}
    gone = dataclasses.replace(grown, module_map=dataclasses.replace(before.module_map, paths={}))
    assert resolutions.looked_up_names(previous, gone) is None  # a kept file lost its module name
    many = {**before.module_map.paths, **{f"app.m{i}": f"app/m{i}.py" for i in range(70)}}
    moved = dataclasses.replace(grown, module_map=dataclasses.replace(before.module_map, paths=many))
    assert resolutions.looked_up_names(previous, moved) is None  # too many names to look for


def test_a_kept_file_with_another_module_name_resolves_everything() -> None:
    """A package made of a plain directory renames every module in it: nothing is reused."""
    base = _program({**BASE, "lib/one.py": "def f():\n    return 1\n"}, 1)
    renamed = _program({**BASE, "lib/one.py": "def f():\n    return 1\n", "lib/__init__.py": ""}, 2)
    assert base.module_map.modules["lib/one.py"] != renamed.module_map.modules["lib/one.py"]
    assert _same_as_full(renamed, _kept(base))[0].resolved is None


def test_the_same_commit_is_resolved_afresh() -> None:
    """A copy of the same commit (what a reproducibility check resolves) reuses nothing."""
    program = _program(BASE, 1)
    assert _same_as_full(_program(BASE, 1), _kept(program))[0].resolved is None


def _real_edits(files: Mapping[str, str]) -> list[tuple[str, str]]:
    """Edits of real files: the first top-level function renamed, the first ``return`` of a
    method made ``return None``, a function appended."""
    out = []
    for path in sorted(files)[1::3]:
        text = files[path]
        renamed = re.sub(r"^def (\w+)\(", r"def \1_renamed(", text, count=1, flags=re.MULTILINE)
        nulled = re.sub(r"^(        return) .+$", r"\1 None", text, count=1, flags=re.MULTILINE)
        for edited in (renamed, nulled, text + "\n\ndef _appended():\n    return 1\n"):
            if edited != text:
                out.append((path, edited))
    return out


def test_edits_of_real_code_give_the_full_graph() -> None:
    """On real code, edit after edit, the incremental graph is the full build's, and most edits
    leave most files alone."""
    files = own_code()
    previous = _kept(_program(files, 0))
    resolved = []
    edits = _real_edits(files)
    assert len(edits) > 15
    for n, (path, text) in enumerate(edits, start=1):
        files[path] = text
        graph, previous = _same_as_full(_program(files, n), previous)
        assert graph.resolved is not None  # no edit adds or removes a file
        resolved.append(graph.resolved)
    assert sorted(resolved)[len(resolved) // 2] < len(files) / 2


def test_files_added_and_removed_in_real_code_give_the_full_graph() -> None:
    """On real code, modules removed and brought back, and a module added that calls into the
    package, one commit after the other: each incremental graph is the full build's, and most
    commits leave most files alone."""
    files = own_code()
    previous = _kept(_program(files, 0))
    added: dict[str, str | None] = {
        "kb_assets/core/callgraph/zz_added.py": (
            "from kb_assets.core.callgraph.graph import build\nfrom kb_assets.core.callgraph import reads\n\n"
            "def again(program):\n    reads.Reads(())\n    return build(program)\n"
        )
    }
    steps: list[dict[str, str | None]] = [added]
    for path in sorted(files)[3::8]:
        steps += [{path: None}, {path: files[path]}]
    resolved = []
    for n, step in enumerate(steps, start=1):
        files = _applied(files, step)
        graph, previous = _same_as_full(_program(files, n), previous)
        resolved.append(graph.resolved if graph.resolved is not None else len(files))
    assert len(steps) > 6
    assert sorted(resolved)[len(resolved) // 2] < len(files) / 2


def test_most_of_a_big_program_stale_resolves_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    """When the files to resolve again hold most of a program's call sites (here: any program
    counts as big), a full build does it: on a big program both cores share that."""
    monkeypatch.setattr(resolutions, "SHARE_MIN_SITES", 0)
    base = _program(BASE, 1)
    kept = _kept(base)
    assert _same_as_full(_program({**BASE, **EDITS["unrelated body"]}, 2), kept)[0].resolved == 1
    assert _same_as_full(_program({**BASE, **EDITS["result changes class"]}, 3), kept)[0].resolved is None


def test_the_share_of_sites_to_resolve_again_is_judged_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    """``_most_sites`` counts the files to resolve again before the whole program: for every set
    of files of a program it answers what counting every file first answered, on either side of
    the threshold (lowered here so that a small program crosses it)."""
    from itertools import combinations

    from kb_assets.core.callgraph.graph import _empty

    files = {f"m{i}.py": "def f():\n    pass\n\n\ndef g():\n" + "    f()\n" * (i + 1) for i in range(5)}
    graph, _ = _empty(program_from_files(files))
    records = graph.evaluator.scopes.records
    sites = {path: sum(len(rec.get("calls", ())) for rec in recs) for path, recs in records.items()}
    total = sum(sites.values())
    answers = set()
    for minimum in (total // 2, total, total + 1):
        monkeypatch.setattr(resolutions, "SHARE_MIN_SITES", minimum)
        for size in range(len(sites) + 1):
            for chosen in combinations(sorted(sites), size):
                paths = set(chosen)
                before = total >= minimum and sum(sites[p] for p in paths) > resolutions.STALE_SHARE * total
                assert resolutions._most_sites(graph.evaluator, paths) == before, (minimum, paths)
                answers.add(before)
    assert answers == {True, False}


def test_a_watch_takes_the_edges_no_change_reaches() -> None:
    """Builds one after the other in a process that keeps its resolutions (``kb watch``): the
    second takes, as the very same objects, the first's edges that no resolved file and no passed
    function touches, builds the others again, and is still the full build's graph."""
    base = _program(BASE, 1)
    edited = _program({**BASE, **EDITS["alias rebound"]}, 2)
    with graph_module.kept_resolutions():
        first = graph_module.build(base)
        kept = graph_module.kept_now()
        assert kept is not None
        graph_module.digest_kept()  # what a watch does between its rounds
        assert all(log.digest is not None for log in kept.logs.values())
        second = graph_module.build(edited)
    full, _ = _build(edited, NO_COPY)
    assert _shape(second) == _shape(full)
    assert second.since == base.sha
    taken = {key for key, edge in second.edges.items() if first.edges.get(key) is edge}
    untouched = {("app.models.Order.total", "app.models.Order.price")}
    assert untouched <= taken
    assert ("app.api.checkout", "app.factory.make") not in taken  # api.py reads the alias: resolved again
    assert not taken & second.changed


def test_a_watch_after_a_file_is_removed_takes_no_edge_of_it() -> None:
    """A removed file's edges are not taken, and the edges of the files that called into it are
    built again: the graph is the full build's."""
    base = _program(BASE, 1)
    shrunk = _program(_applied(BASE, FILE_EDITS["an imported package member removed"]), 2)
    with graph_module.kept_resolutions():
        first = graph_module.build(base)
        second = graph_module.build(shrunk)
    assert _shape(second) == _shape(_build(shrunk, NO_COPY)[0])
    assert not any(edge.caller.path == "app/tools.py" for edge in second.edges.values())
    assert any(first.edges.get(key) is edge for key, edge in second.edges.items())


def test_a_log_is_saved_without_its_digest() -> None:
    """A log's digest (``reuse``) stays in the process that made it: the resolutions file holds
    the log's effects, counts and read set only, and a log read back makes its digest again."""
    import pickle

    from kb_assets.core.callgraph import reuse

    kept = _kept(_program(BASE, 1))
    log = kept.logs["app/api.py"]
    made = reuse.digest(log)
    assert log.digest is made
    assert made.keys
    back = pickle.loads(pickle.dumps(log))
    assert back.digest is None
    assert (back.ops, back.stats, back.reads) == (log.ops, log.stats, log.reads)
    assert reuse.digest(back).keys == made.keys
