"""The shared symbol table: ``SymbolTable.lookup`` and ``resolve`` over whole programs.

Programs are built from source text with ``tests.programs`` (same blob analysis and module map as
the pipeline, facts round-tripped through the cache encoding), so these tests pin the exact
behaviour the extractors build on.
"""

from __future__ import annotations

from dataclasses import replace

from kb_assets.core.program import Program
from kb_assets.core.symbols.model import Symbol
from kb_assets.core.symbols.table import SymbolTable, symbol_table
from tests.programs import program_from_files


def _hops(program: Program, symbol: Symbol) -> list[str]:
    """Each hop of a symbol's chain as ``path:fq_symbol_path`` of its span."""
    return [f"{p}:{program.files[p].spans[o].fq_symbol_path}" for p, o in symbol.chain]


def _definition(program: Program, symbol: Symbol) -> str:
    assert symbol.path is not None
    assert symbol.span is not None
    return f"{symbol.path}:{program.files[symbol.path].spans[symbol.span].fq_symbol_path}"


# -- lookup ---------------------------------------------------------------------------------------
CHAIN = {
    "pkg/__init__.py": "from ._impl import Thing as Alias\nfrom pkg._impl._core import helper\n",
    "pkg/_impl/__init__.py": "from ._core import Thing\n",
    "pkg/_impl/_core.py": "class Thing:\n    x = 1\n    def m(self): pass\n\ndef helper(): pass\nVALUE = 3\n",
    "other/__init__.py": "from pkg import Alias\nimport pkg._impl as impl\n",
}


def test_lookup_follows_aliases_and_private_subpackages_with_every_hop() -> None:
    """An aliased name re-exported through a private subpackage resolves to its definition, and
    the chain names each import statement followed, in order."""
    program = program_from_files(CHAIN)
    table = SymbolTable(program)
    alias = table.lookup("pkg", "Alias")
    assert alias is not None
    assert (alias.kind, alias.dotted, alias.module) == ("class", "pkg._impl._core.Thing", "pkg._impl._core")
    assert _hops(program, alias) == [
        "pkg/__init__.py:<import:._impl>",
        "pkg/_impl/__init__.py:<import:._core>",
    ]
    assert _definition(program, alias) == "pkg/_impl/_core.py:Thing"
    helper = table.lookup("pkg", "helper")
    assert helper is not None
    assert (helper.kind, helper.dotted) == ("function", "pkg._impl._core.helper")


def test_lookup_across_top_level_packages_and_to_modules() -> None:
    """A re-export from another top-level package of the repository, and a module bound by
    ``import a.b as c``, both resolve inside the repository."""
    table = SymbolTable(program_from_files(CHAIN))
    thing = table.lookup("other", "Alias")
    assert thing is not None
    assert thing.dotted == "pkg._impl._core.Thing"
    assert len(thing.chain) == 3
    impl = table.lookup("other", "impl")
    assert impl is not None
    assert (impl.kind, impl.dotted, impl.span) == ("module", "pkg._impl", 0)


def test_definitions_in_the_module_itself_have_no_chain() -> None:
    """A name the module defines is its own definition: empty chain, its own span."""
    program = program_from_files(CHAIN)
    value = SymbolTable(program).lookup("pkg._impl._core", "VALUE")
    assert value is not None
    assert value.chain == ()
    assert value.kind == "attribute"
    assert _definition(program, value) == "pkg/_impl/_core.py:VALUE"


def test_star_imports_respect_all_or_public_names() -> None:
    """``from m import *`` binds the target's ``__all__`` when it has one, else every name without
    a leading underscore (imported ones included, as CPython does)."""
    files = {
        "p/__init__.py": "from .with_all import *\nfrom .without_all import *\n",
        "p/with_all.py": "__all__ = ['listed']\ndef listed(): pass\ndef unlisted(): pass\n",
        "p/without_all.py": "import os\ndef public(): pass\ndef _private(): pass\n",
    }
    table = SymbolTable(program_from_files(files))
    assert table.lookup("p", "listed") is not None
    assert table.lookup("p", "unlisted") is None
    assert table.lookup("p", "public") is not None
    assert table.lookup("p", "_private") is None
    os_symbol = table.lookup("p", "os")
    assert os_symbol is not None
    assert os_symbol.external == "os"
    assert len(os_symbol.chain) == 2


def test_later_bindings_win_like_python() -> None:
    """Within one module the last binding of a name in source order is the one that counts."""
    files = {
        "p/__init__.py": "try:\n    from .fast import run\nexcept ImportError:\n    from .slow import run\n",
        "p/fast.py": "def run(): pass\n",
        "p/slow.py": "def run(): pass\n",
    }
    run = SymbolTable(program_from_files(files)).lookup("p", "run")
    assert run is not None
    assert run.dotted == "p.slow.run"


def test_star_import_cycles_terminate() -> None:
    """``a`` star-imports ``b`` and ``b`` star-imports ``a``: every name still resolves to its
    definition, nothing recurses forever; a pure import cycle of one name answers None."""
    files = {
        "a.py": "def fa(): pass\nfrom b import *\n",
        "b.py": "from a import *\ndef fb(): pass\n",
        "c.py": "from d import x\n",
        "d.py": "from c import x\n",
    }
    table = SymbolTable(program_from_files(files))
    for module in ("a", "b"):
        fa, fb = table.lookup(module, "fa"), table.lookup(module, "fb")
        assert fa is not None
        assert fa.dotted == "a.fa"
        assert fb is not None
        assert fb.dotted == "b.fb"
    assert table.lookup("c", "x") is None


def test_externals_and_unresolvable_first_party_names() -> None:
    """Names from outside the repository keep their external dotted name (no path); a first-party
    module that does not exist resolves to nothing; an unbound name is None."""
    files = {
        "app/__init__.py": (
            "from pydantic import BaseModel\nimport sqlalchemy as sa\n"
            "from . import ghost\nfrom app.missing import X\n"
        ),
    }
    table = SymbolTable(program_from_files(files))
    base = table.lookup("app", "BaseModel")
    assert base is not None
    assert (base.external, base.dotted, base.path, base.kind) == (
        "pydantic.BaseModel",
        None,
        None,
        "attribute",
    )
    sa = table.lookup("app", "sa")
    assert sa is not None
    assert (sa.external, sa.kind) == ("sqlalchemy", "module")
    assert table.lookup("app", "ghost") is None
    assert table.lookup("app", "X") is None
    assert table.lookup("app", "nothing") is None


def test_from_dot_import_of_a_submodule_in_its_own_package() -> None:
    """``from . import sub`` inside ``pkg/__init__`` binds the submodule (not a cycle), and a
    submodule nobody binds is still reachable as an attribute of its package."""
    files = {"pkg/__init__.py": "from . import sub\n", "pkg/sub.py": "X = 1\n", "pkg/other.py": ""}
    table = SymbolTable(program_from_files(files))
    sub = table.lookup("pkg", "sub")
    assert sub is not None
    assert (sub.kind, sub.dotted) == ("module", "pkg.sub")
    other = table.lookup("pkg", "other")
    assert other is not None
    assert other.chain == ()
    assert other.dotted == "pkg.other"


# -- resolve --------------------------------------------------------------------------------------
MODELS = {
    "shop/__init__.py": "",
    "shop/models.py": (
        "from .base import Base\n"
        "class Order(Base):\n    total: int = 0\n    def pay(self): pass\n"
        "    class Meta:\n        table = 'o'\n"
    ),
    "shop/base.py": "class Base:\n    def save(self): pass\n",
    "shop/api.py": (
        "from . import models\nimport shop.models\nimport sqlalchemy as sa\nfrom .models import Order\n"
    ),
}


def test_resolve_walks_modules_classes_and_externals() -> None:
    """Dotted expressions resolve segment by segment: module attributes, class-level bindings,
    nested classes, members inherited from first-party bases, and external attribute chains."""
    program = program_from_files(MODELS)
    table = SymbolTable(program)
    order = table.resolve("shop.api", "models.Order")
    assert order is not None
    assert order.dotted == "shop.models.Order"
    assert _hops(program, order) == ["shop/api.py:<import:.>"]
    via_import = table.resolve("shop.api", "shop.models.Order")
    assert via_import == replace(order, chain=via_import.chain if via_import else ())
    assert via_import is not None
    assert _hops(program, via_import) == ["shop/api.py:<import:shop.models>"]
    pay = table.resolve("shop.api", "Order.pay")
    assert pay is not None
    assert (pay.kind, pay.dotted) == ("function", "shop.models.Order.pay")
    total = table.resolve("shop.api", "Order.total")
    assert total is not None
    assert (total.kind, total.dotted, total.span) == (
        "attribute",
        "shop.models.Order.total",
        order.span,
    )
    meta = table.resolve("shop.api", "models.Order.Meta.table")
    assert meta is not None
    assert meta.dotted == "shop.models.Order.Meta.table"
    save = table.resolve("shop.api", "Order.save")
    assert save is not None
    assert save.dotted == "shop.base.Base.save"
    rel = table.resolve("shop.api", "sa.orm.relationship")
    assert rel is not None
    assert rel.external == "sqlalchemy.orm.relationship"
    assert rel.path is None
    assert table.resolve("shop.api", "Order.pay.nothing") is None
    assert table.resolve("shop.api", "models.Nope") is None


def test_symbols_carry_their_defining_facts() -> None:
    """A resolved class carries its bases and decorators, so extractors need no second lookup."""
    order = SymbolTable(program_from_files(MODELS)).resolve("shop.api", "Order")
    assert order is not None
    assert order.facts is not None
    assert order.facts["bases"] == [{"kind": "name", "dotted": "Base"}]


# -- the table as a whole -------------------------------------------------------------------------
def test_tables_are_deterministic_and_memoized_per_program() -> None:
    """Two tables of the same program answer identically; ``symbol_table`` builds once per program."""
    program = program_from_files(CHAIN | MODELS)
    first, second = SymbolTable(program), SymbolTable(program)
    for module in sorted(first.facts):
        assert first.exports(module) == second.exports(module)
        for name in first.namespaces.get(module):
            assert first.lookup(module, name) == second.lookup(module, name)
    assert symbol_table(program) is symbol_table(program)
    assert symbol_table(program_from_files(CHAIN)) is not symbol_table(program)
