"""The scripts of ``bench/`` loaded as modules, for the tests that run their functions."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


def bench_module(name: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """``bench/<name>.py`` as the module ``kb_bench_<name>``, with ``bench/`` on the path (its
    scripts import each other) and in ``sys.modules`` (dataclasses look their module up) for the
    length of the test."""
    monkeypatch.syspath_prepend(str(BENCH))
    spec = importlib.util.spec_from_file_location(f"kb_bench_{name}", BENCH / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, f"kb_bench_{name}", module)
    spec.loader.exec_module(module)
    return module
