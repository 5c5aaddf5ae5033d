"""A symbol table that reuses the last table's module views and namespaces (the next commit of a
watched branch) answers exactly as one built from nothing, reuses a view only for the very same
facts, and a namespace only for the same module over the same facts without a star import."""

from __future__ import annotations

from dataclasses import replace

from kb_assets.core.modules import map_modules
from kb_assets.core.program import Program
from kb_assets.core.symbols import table
from kb_assets.core.symbols.table import SymbolTable
from tests.programs import program_from_files

FIRST = {
    "pkg/__init__.py": (
        "from pkg.a import helper as helper\nfrom pkg.c import *\n__all__ = ['helper', 'Thing']\n"
    ),
    "pkg/a.py": "def helper():\n    return 1\n\nclass Base:\n    x = 1\n",
    "pkg/b.py": "from pkg.a import Base\n\nclass Thing(Base):\n    y = 2\n",
    "pkg/c.py": "from .b import Thing\n\ndef make():\n    return Thing()\n",
}
CHANGED_B = "from pkg.a import helper\n\nclass Thing:\n    z = 3\n"


def _next_commit(first: Program) -> Program:
    """``first`` with ``pkg/b.py`` edited (new facts) and ``pkg/c.py`` renamed to ``pkg/d.py`` (the
    same blob and facts object under another module name), as the loader would share them."""
    files = dict(first.files)
    files["pkg/b.py"] = program_from_files({**FIRST, "pkg/b.py": CHANGED_B}).files["pkg/b.py"]
    moved = files.pop("pkg/c.py")
    files["pkg/d.py"] = replace(moved, path="pkg/d.py", module="pkg.d")
    text = {**FIRST, "pkg/d.py": FIRST["pkg/c.py"]}
    del text["pkg/c.py"]
    return Program(sha="1" * 40, files=files, module_map=map_modules(text))


def _answers(symbols: SymbolTable) -> dict[tuple[str, str], object]:
    names = {"helper", "Base", "Thing", "make", "x", "y", "z", "missing", "a", "b", "c", "d"}
    return {(m, n): symbols.lookup(m, n) for m in sorted(symbols.facts) for n in sorted(names)} | {
        (m, "__exports__"): symbols.exports(m) for m in sorted(symbols.facts)
    }


def test_reused_views_answer_as_fresh_ones() -> None:
    first = program_from_files(FIRST)
    before = SymbolTable(first)
    second = _next_commit(first)
    reused = SymbolTable(second, before.views)
    fresh = SymbolTable(second)
    assert reused.facts == fresh.facts
    assert _answers(reused) == _answers(fresh)
    assert "pkg.d" in reused.facts
    assert "pkg.c" not in reused.facts
    # The unchanged file's view is the last table's object; the edited file's is new; the moved
    # file's carries its new name and source.
    assert reused.facts["pkg.a"] is before.facts["pkg.a"]
    assert reused.facts["pkg.b"] is not before.facts["pkg.b"]
    assert reused.facts["pkg.b"].bindings != before.facts["pkg.b"].bindings
    assert reused.facts["pkg.d"].source is second.files["pkg/d.py"]
    assert reused.facts["pkg.d"].bindings is before.facts["pkg.c"].bindings


def test_inherited_namespaces_answer_as_fresh_ones() -> None:
    """Only the unchanged module without a star import (``pkg.a``) takes the last table's
    namespace; the package (a star import), the edited module and the moved one are built
    again, and every answer is a fresh table's."""
    first = program_from_files(FIRST)
    before = SymbolTable(first)
    second = _next_commit(first)
    inherited = SymbolTable(second, before.views, before.namespaces)
    fresh = SymbolTable(second)
    assert _answers(inherited) == _answers(fresh)
    for module in inherited.facts:
        assert inherited.namespaces.get(module) == fresh.namespaces.get(module)
        assert inherited.namespaces.own(module) == fresh.namespaces.own(module)
    earlier = {m: before.namespaces.built(m) for m in inherited.facts}
    kept = {m for m, built in earlier.items() if built and inherited.namespaces.get(m) is built[0]}
    assert kept == {"pkg.a"}


def test_views_are_not_reused_for_equal_facts_from_another_load() -> None:
    earlier = SymbolTable(program_from_files(FIRST))
    again = program_from_files(FIRST)  # the same blobs, decoded again: other facts objects
    symbols = SymbolTable(again, earlier.views)
    assert symbols.facts == earlier.facts
    for name, view in symbols.facts.items():
        assert view.source is again.files[view.source.path]
        assert view.bindings is not earlier.facts[name].bindings


def test_symbol_table_hands_each_table_the_last_ones_views() -> None:
    """``symbol_table`` (what extractors call) passes the last table's views on: a watched
    commit's unchanged file gets the previous commit's view object."""
    first = program_from_files(FIRST)
    before = table.symbol_table(first)
    after = table.symbol_table(_next_commit(first))
    assert after.facts["pkg.a"] is before.facts["pkg.a"]
    assert after.namespaces.get("pkg.a") is before.namespaces.get("pkg.a")
    assert after.namespaces.get("pkg") is not before.namespaces.get("pkg")
