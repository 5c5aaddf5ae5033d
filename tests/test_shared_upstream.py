"""A run resolves the routes and event handlers once: their own assets and the process paths'
entry points share one extraction per program; any other extractor object resolves on its own."""

from __future__ import annotations

from typing import Any

import pytest

from kb_assets.core.extractors.api_routes import ApiRoutesExtractor
from kb_assets.core.extractors.registry import extractor
from kb_assets.core.paths.entrypoints import resolve_shared, upstream
from tests.programs import program_from_files

APP = """\
from fastapi import FastAPI

app = FastAPI()


@app.get("/items")
def items() -> list[int]:
    return helper()


def helper() -> list[int]:
    return [1]
"""


def _counted(monkeypatch: pytest.MonkeyPatch, ex: Any) -> list[object]:
    """Record each ``resolve`` of the extractor object ``ex``."""
    calls: list[object] = []
    real = ex.resolve

    def resolve(program: Any) -> Any:
        calls.append(program)
        return real(program)

    monkeypatch.setattr(ex, "resolve", resolve)
    return calls


def test_the_registered_routes_extractor_resolves_once_per_program(monkeypatch: pytest.MonkeyPatch) -> None:
    program = program_from_files({"app.py": APP})
    routes = extractor("api_routes")
    calls = _counted(monkeypatch, routes)
    own = resolve_shared(program, routes)
    assert upstream(program, "api_routes") is own
    assert resolve_shared(program, routes) is own
    assert calls == [program]
    assert [d.payload["handler"] for d in own.drafts] == ["app.items"]
    other = program_from_files({"app.py": APP}, sha="1" * 40)
    assert resolve_shared(other, routes) is not own  # another commit: resolved again
    assert calls == [program, other]


def test_an_unregistered_extractor_object_resolves_on_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """A test's or a gate's own instance (another version, say) never takes the shared result."""
    program = program_from_files({"app.py": APP})
    mine = ApiRoutesExtractor()
    calls = _counted(monkeypatch, mine)
    shared = upstream(program, "api_routes")
    assert resolve_shared(program, mine) is not shared
    assert calls == [program]


def test_extractors_that_entry_points_do_not_read_are_not_kept() -> None:
    program = program_from_files({"app.py": APP})
    imports = extractor("imports")
    assert resolve_shared(program, imports) is not resolve_shared(program, imports)
