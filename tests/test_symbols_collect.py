"""The ``symbols`` collector: the file-local facts every symbol-table query is built from.

Also the facts-only collector framework it rides on: collectors run next to the extractors in the
one parse of a blob, under their own ids, and their facts versions are part of the parser version.
"""

from __future__ import annotations

from typing import Any

import pytest

from kb_assets.core.blobs import analyze_blob
from kb_assets.core.extractors.registry import COLLECTORS, EXTRACTORS, parser_version
from kb_assets.core.spans import ParseLimits
from kb_assets.core.symbols.collect import SymbolsCollector
from tests.programs import program_from_files


def _facts(source: str) -> dict[str, Any]:
    program = program_from_files({"m.py": source})
    facts: dict[str, Any] = program.files["m.py"].facts["symbols"]
    return facts


def _by_name(bindings: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {b["name"]: b for b in bindings}


# -- facts --------------------------------------------------------------------------------
def test_collector_records_every_module_binding_form() -> None:
    """Classes, (async, decorated) functions, plain/annotated/chained/unpacking assignments and
    every import form are recorded in source order with what they bind and point at."""
    facts = _facts(
        "import a.b\nimport a.b as c\nfrom m import x as y, z\nfrom . import rel\nfrom ..up import *\n"
        "class K: pass\nasync def f(): pass\n@deco\ndef g(): pass\n"
        "v: int = 1\nw = u = other.attr\np, q = 1, 2\nbare: str\n"
    )
    names = [b["name"] for b in facts["bindings"]]
    assert names == ["a", "c", "y", "z", "rel", "*", "K", "f", "g", "v", "w", "u", "p", "q", "bare"]
    b = _by_name(facts["bindings"])
    assert (b["a"]["kind"], b["a"]["module"], b["a"]["imported"]) == ("import", "a", "a.b")
    assert (b["c"]["module"], b["c"]["aliased"]) == ("a.b", True)
    assert (b["y"]["kind"], b["y"]["module"], b["y"]["attr"], b["y"]["aliased"]) == ("from", "m", "x", True)
    assert "aliased" not in b["z"]
    assert (b["rel"]["module"], b["rel"]["attr"]) == (".", "rel")
    assert (b["*"]["kind"], b["*"]["module"]) == ("star", "..up")
    assert b["f"]["async"] is True
    assert b["g"]["decorators"] == [{"kind": "name", "dotted": "deco"}]
    assert b["v"]["value"] == {"kind": "literal", "value": 1}
    assert b["v"]["annotation"] == {"kind": "name", "dotted": "int"}
    assert b["w"]["value"] == b["u"]["value"] == {"kind": "name", "dotted": "other.attr"}
    assert b["p"]["value"] == {"kind": "other"}
    assert b["bare"]["value"] is None


def test_compound_statements_count_and_function_bodies_do_not() -> None:
    """Bindings in every branch of if/try/with/for at module level are recorded in source order
    (so the later one wins); bindings inside a function body are not; TYPE_CHECKING is flagged."""
    facts = _facts(
        "from typing import TYPE_CHECKING\n"
        "try:\n    import fast as impl\nexcept ImportError:\n    import slow as impl\nelse:\n    ok = 1\n"
        "if TYPE_CHECKING:\n    from x import T\nelse:\n    T = None\n"
        "with ctx():\n    w = 2\nfor i in range(3):\n    looped = i\n"
        "def f():\n    inner = 1\n    import hidden\n"
    )
    impls = [b["module"] for b in facts["bindings"] if b["name"] == "impl"]
    assert impls == ["fast", "slow"]
    names = {b["name"] for b in facts["bindings"]}
    assert {"ok", "w", "looped", "f"} <= names
    assert not {"inner", "hidden"} & names
    t_bindings = [b for b in facts["bindings"] if b["name"] == "T"]
    assert [b.get("type_checking", False) for b in t_bindings] == [True, False]


def test_class_facts_keep_bases_keywords_decorators_and_body() -> None:
    """A class records its bases as dotted names with their call/subscript shape, its keywords
    (``metaclass=``), its decorators with literal arguments, and its body's bindings."""
    facts = _facts(
        "@app.register('orders', strict=True)\n"
        "class Order(Generic[T], sa.Base, metaclass=Meta):\n"
        "    total: Mapped[int] = field(default=0)\n"
        "    def pay(self): pass\n"
        "    class Config:\n        frozen = True\n"
    )
    order, config = facts["classes"]
    assert (order["qualname"], config["qualname"]) == ("Order", "Order.Config")
    assert order["bases"] == [
        {"kind": "subscript", "dotted": "Generic", "index": [{"kind": "name", "dotted": "T"}]},
        {"kind": "name", "dotted": "sa.Base"},
    ]
    assert order["keywords"] == {"metaclass": {"kind": "name", "dotted": "Meta"}}
    assert order["decorators"] == [
        {
            "kind": "call",
            "callee": "app.register",
            "args": [{"kind": "literal", "value": "orders"}],
            "kwargs": {"strict": {"kind": "literal", "value": True}},
        }
    ]
    body = _by_name(order["bindings"])
    assert body["total"]["span"] == order["span"]  # class-level assignments are not spans
    assert body["total"]["value"]["callee"] == "field"
    assert (body["pay"]["qualname"], body["Config"]["kind"]) == ("Order.pay", "class")


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        ('__all__ = ["a", "b"]', {"op": "set", "items": [{"name": "a"}, {"name": "b"}]}),
        ("__all__ = ('a',)", {"op": "set", "items": [{"name": "a"}]}),
        ('__all__ += ["c"]', {"op": "add", "items": [{"name": "c"}]}),
        ('__all__.extend(["d", "e"])', {"op": "add", "items": [{"name": "d"}, {"name": "e"}]}),
        ('__all__.append("f")', {"op": "add", "items": [{"name": "f"}]}),
        ('__all__ = a.__all__ + ["g"]', {"op": "set", "items": [{"ref": "a"}, {"name": "g"}]}),
        ('__all__ = ["h"] + p.q.__all__', {"op": "set", "items": [{"name": "h"}, {"ref": "p.q"}]}),
        ('__all__ = [*a.__all__, "i"]', {"op": "set", "items": [{"ref": "a"}, {"name": "i"}]}),
        ("__all__: list[str] = ['j']", {"op": "set", "items": [{"name": "j"}]}),
        ("__all__ = base_all + [*extra]", {"op": "set", "items": [{"var": "base_all"}, {"var": "extra"}]}),
    ],
)
def test_static_all_operations(statement: str, expected: dict[str, Any]) -> None:
    """Every static ``__all__`` form becomes a set/add operation with names and references."""
    (op,) = _facts(statement + "\n")["all"]
    assert {k: op[k] for k in expected} == expected
    assert "dynamic" not in op


@pytest.mark.parametrize(
    "statement",
    ["__all__ = [n for n in dir()]", "__all__ = sorted(NAMES)", "__all__.remove('x')", "__all__ += names()"],
)
def test_anything_else_makes_all_dynamic(statement: str) -> None:
    """Any other ``__all__`` statement is recorded as dynamic, with its line and text."""
    (op,) = _facts("x = 1\n" + statement + "\n")["all"]
    assert op["dynamic"] is True
    assert op["line"] == 2
    assert op["text"] == statement


def test_collectors_run_with_extractors_under_their_own_ids() -> None:
    """``analyze_blob`` stores each collector's facts under its id next to the extractors'; an id
    used twice is refused; ``parser_version`` changes with a collector's facts version."""
    parsed = analyze_blob("0" * 40, b"x = 1\n", EXTRACTORS, ParseLimits(), COLLECTORS)
    # public_api collects nothing of its own; routes and events find nothing in this source
    assert set(parsed.facts) == {"imports", "symbols", "calls"}
    with pytest.raises(ValueError, match="unique"):
        analyze_blob(
            "0" * 40, b"x = 1\n", EXTRACTORS, ParseLimits(), (SymbolsCollector(), SymbolsCollector())
        )

    class Bumped(SymbolsCollector):
        facts_version = "999"

    assert parser_version(EXTRACTORS, (Bumped(),)) != parser_version(EXTRACTORS, COLLECTORS)
    assert parser_version(EXTRACTORS, ()) != parser_version(EXTRACTORS, COLLECTORS)
