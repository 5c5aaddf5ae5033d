"""The module map: import roots, dotted names, collisions and unimportable files, order-independent."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kb_assets.core.modules import MODULE_NAME_COLLISION, NOT_IMPORTABLE, ModuleMap, map_modules


def _reasons(module_map: ModuleMap) -> dict[str, str]:
    """path -> gap reason, for compact assertions."""
    return {gap.path: gap.reason for gap in module_map.gaps}


def test_flat_layout_is_rooted_at_the_repository_root() -> None:
    """Packages at the top of the repo are rooted at "", with __init__ naming the package itself."""
    result = map_modules(
        ["pkg/__init__.py", "pkg/core.py", "pkg/sub/__init__.py", "pkg/sub/leaf.py", "setup.py"]
    )
    assert result.modules == {
        "pkg/__init__.py": "pkg",
        "pkg/core.py": "pkg.core",
        "pkg/sub/__init__.py": "pkg.sub",
        "pkg/sub/leaf.py": "pkg.sub.leaf",
        "setup.py": "setup",
    }
    assert result.paths == {module: path for path, module in result.modules.items()}
    assert result.packages == {"pkg", "pkg.sub"}
    assert result.roots == ("",)
    assert result.top_level == {"pkg", "setup"}
    assert result.gaps == ()


def test_src_layout_is_rooted_at_src() -> None:
    """A src/ directory without __init__.py is the import root of the packages below it."""
    result = map_modules(["src/app/__init__.py", "src/app/models.py", "src/app/api/__init__.py"])
    assert result.modules == {
        "src/app/__init__.py": "app",
        "src/app/api/__init__.py": "app.api",
        "src/app/models.py": "app.models",
    }
    assert result.roots == ("src",)
    assert result.top_level == {"app"}


def test_several_top_level_packages_share_a_root() -> None:
    """Two sibling packages and a top-level module under one root are all first-party top-level names."""
    result = map_modules(["src/one/__init__.py", "src/two/__init__.py", "src/two/x.py", "src/solo.py"])
    assert result.top_level == {"one", "two", "solo"}
    assert result.modules["src/two/x.py"] == "two.x"
    assert result.roots == ("src",)


def test_test_directories_without_init_make_top_level_modules() -> None:
    """tests/ without __init__.py roots each test file at tests/, and a tests/ package nests normally."""
    result = map_modules(["tests/test_a.py", "tests/helpers/__init__.py", "tests/helpers/db.py", "app.py"])
    assert result.modules == {
        "app.py": "app",
        "tests/helpers/__init__.py": "helpers",
        "tests/helpers/db.py": "helpers.db",
        "tests/test_a.py": "test_a",
    }
    assert result.roots == ("", "tests")
    packaged = map_modules(["tests/__init__.py", "tests/test_a.py"])
    assert packaged.modules == {"tests/__init__.py": "tests", "tests/test_a.py": "tests.test_a"}


def test_non_identifier_names_are_not_importable() -> None:
    """Package directories named with dashes, leading digits or keywords are not_importable, and so
    are dotted stems; a module file's own name may be any dot-free name (``importlib`` loads
    ``0001_initial.py`` and ``class.py``); a root dir may have any name."""
    result = map_modules(
        [
            "2fa.py",
            "my-pkg/__init__.py",
            "my-pkg/mod.py",
            "pkg/__init__.py",
            "pkg/class.py",
            "pkg/foo.bar.py",
            "pkg/ok.py",
            "my-scripts/run_me.py",
            "__init__.py",
        ]
    )
    assert _reasons(result) == {
        "my-pkg/__init__.py": NOT_IMPORTABLE,
        "my-pkg/mod.py": NOT_IMPORTABLE,
        "pkg/foo.bar.py": NOT_IMPORTABLE,
        "__init__.py": NOT_IMPORTABLE,
    }
    assert result.modules == {
        "2fa.py": "2fa",
        "pkg/__init__.py": "pkg",
        "pkg/class.py": "pkg.class",
        "pkg/ok.py": "pkg.ok",
        "my-scripts/run_me.py": "run_me",
    }
    assert all(gap.source == "modules" and gap.detail for gap in result.gaps)


def test_collisions_keep_exactly_one_file() -> None:
    """Same-named files: package first, then shallowest root, then smallest path; the rest get gaps."""
    result = map_modules(
        [
            "a.py",
            "a/__init__.py",
            "tests/conftest.py",
            "tests/unit/conftest.py",
            "tests/unit/deeper/conftest.py",
            "x/tool.py",
            "y/tool.py",
        ]
    )
    assert result.paths["a"] == "a/__init__.py"
    assert result.paths["conftest"] == "tests/conftest.py"
    assert result.paths["tool"] == "x/tool.py"
    assert _reasons(result) == {
        "a.py": MODULE_NAME_COLLISION,
        "tests/unit/conftest.py": MODULE_NAME_COLLISION,
        "tests/unit/deeper/conftest.py": MODULE_NAME_COLLISION,
        "y/tool.py": MODULE_NAME_COLLISION,
    }
    details = {gap.path: gap.detail for gap in result.gaps}
    assert "tests/conftest.py" in details["tests/unit/conftest.py"]
    assert "a/__init__.py" in details["a.py"]


def test_modules_of_a_shadowed_package_are_collisions_too() -> None:
    """When package `helpers` is won by another root, that root's helpers.x cannot be imported either."""
    result = map_modules(["t/helpers/__init__.py", "t/u/helpers/__init__.py", "t/u/helpers/extra.py"])
    assert result.modules == {"t/helpers/__init__.py": "helpers"}
    assert _reasons(result) == {
        "t/u/helpers/__init__.py": MODULE_NAME_COLLISION,
        "t/u/helpers/extra.py": MODULE_NAME_COLLISION,
    }
    assert "shadowed" in next(g.detail for g in result.gaps if g.path == "t/u/helpers/extra.py")


def test_only_py_files_count() -> None:
    """Stubs, data files and duplicates in the input are ignored."""
    result = map_modules(["pkg/__init__.py", "pkg/__init__.pyi", "pkg/data.json", "pkg/__init__.py"])
    assert result.modules == {"pkg/__init__.py": "pkg"}
    assert result.gaps == ()
    assert map_modules([]) == ModuleMap({}, {}, frozenset(), (), frozenset(), ())


_TREE = [
    "a.py",
    "a/__init__.py",
    "a/b.py",
    "a/c/__init__.py",
    "a/c/d.py",
    "src/a/__init__.py",
    "src/e/__init__.py",
    "src/e/f.py",
    "tests/conftest.py",
    "tests/unit/conftest.py",
    "tests/unit/test_x.py",
    "tests/helpers/__init__.py",
    "tests/unit/helpers/__init__.py",
    "tests/unit/helpers/g.py",
    "2fa.py",
    "my-tool/__init__.py",
    "scripts/run.py",
    "docs/conf.py",
    "docs/run.py",
]


@settings(max_examples=60, deadline=None)
@given(st.permutations(_TREE), st.lists(st.sampled_from(_TREE), max_size=5))
def test_the_map_does_not_depend_on_input_order(order: list[str], duplicates: list[str]) -> None:
    """Any permutation of the paths, with repeats, yields the identical ModuleMap (values and order)."""
    expected = map_modules(_TREE)
    got = map_modules([*order, *duplicates])
    assert got == expected
    assert list(got.modules.items()) == list(expected.modules.items())
    assert set(got.modules) | {gap.path for gap in got.gaps} == set(_TREE)
    assert set(got.modules).isdisjoint(gap.path for gap in got.gaps)
