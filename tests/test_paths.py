"""Unit tests of process paths: the sink registry and its override, entry points, the search.

Programs come from ``tests.programs``; ``.kb/sinks.yaml`` is handed to the program as its
``config`` (what ``indexing.load`` reads from the commit). ``test_paths_oracle`` covers the pipeline.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from kb_assets.core.extractors.base import Extraction
from kb_assets.core.extractors.process_paths import ProcessPathsExtractor
from kb_assets.core.paths.script_sites import NO_SITES, script_sites
from kb_assets.core.paths.sinks import SINKS_FILE, sink_registry
from tests.programs import program_from_files


def _paths(files: Mapping[str, str], sinks: str | None = None) -> tuple[dict[str, list[str]], Extraction]:
    program = program_from_files(files)
    if sinks is not None:
        program = replace(program, config={SINKS_FILE: sinks})
    extraction = ProcessPathsExtractor().resolve(program)
    return {d.logical_key: list(d.payload["chain"]) for d in extraction.drafts}, extraction


def test_override_adds_removes_and_is_digested() -> None:
    """``.kb/sinks.yaml`` adds patterns (new categories too), removes built-in patterns or whole
    categories, sets the depth cap, and every change moves the digest."""
    builtin, _ = sink_registry({})
    custom, gaps = sink_registry(
        {SINKS_FILE: "max_depth: 2\nremove: [http, os.system]\nsinks:\n  pay: [stripe.Charge.create]\n"}
    )
    assert not gaps
    assert custom.max_depth == 2
    assert custom.digest != builtin.digest
    assert builtin.match("requests.post") is not None
    assert custom.match("requests.post") is None
    assert custom.match("os.system") is None
    assert custom.match("subprocess.run") is not None
    rule = custom.match("stripe.Charge.create")
    assert rule is not None
    assert rule.category == "pay"
    replaced, _ = sink_registry({SINKS_FILE: "replace: true\nsinks:\n  only: [a.b]\n"})
    assert [r.pattern for r in replaced.rules] == ["a.b"]


def test_bad_override_is_a_gap_and_builtins_apply() -> None:
    """A file that is not YAML, or not of the documented shape, is a ``bad_sinks_config`` gap and the
    built-in registry applies unchanged."""
    builtin, _ = sink_registry({})
    for text in (
        "sinks: [unclosed",
        "sinks:\n  x: 3\n",
        "colour: red\n",
        "sinks:\n  x: [{pattern: a, mode: read}]\n",
    ):
        registry, gaps = sink_registry({SINKS_FILE: text})
        assert [g.reason for g in gaps] == ["bad_sinks_config"], text
        assert registry.digest == builtin.digest


def test_open_is_a_sink_only_when_it_writes() -> None:
    """``open`` (and ``Path.open``) count as file writes only with a writing mode literal."""
    registry, _ = sink_registry({})
    assert registry.match("builtins.open", "w") is not None
    assert registry.match("builtins.open", "a+") is not None
    assert registry.match("builtins.open", "r") is None
    assert registry.match("builtins.open", None) is None


CLI = {
    "tool/__init__.py": "",
    "tool/work.py": "import subprocess\ndef job():\n    subprocess.run(['x'])\n",
    "tool/cli.py": "import click\nimport typer\nimport argparse\nfrom tool.work import job\n"
    "@click.group()\ndef cli(): pass\n"
    "@cli.command()\ndef sync():\n    job()\n"
    "app = typer.Typer()\n@app.command()\ndef run():\n    job()\n"
    "def handle(args):\n    job()\n"
    "def main():\n    p = argparse.ArgumentParser()\n    p.set_defaults(func=handle)\n",
    "tool/__main__.py": "from tool.work import job\njob()\n",
}


def test_cli_entry_points() -> None:
    """click commands on a click group, typer commands, argparse ``set_defaults(func=...)`` handlers
    and ``__main__.py`` modules are entry points of kind ``cli``."""
    paths, extraction = _paths(CLI)
    assert set(paths) == {
        "path:tool.cli.sync->subprocess.run",
        "path:tool.cli.run->subprocess.run",
        "path:tool.cli.handle->subprocess.run",
        "path:tool.__main__->subprocess.run",
    }
    assert {d.payload["entry_kind"] for d in extraction.drafts} == {"cli"}


def test_script_sites_are_scanned_once_per_facts_object() -> None:
    """``script_sites`` finds each file's main guard and command candidates, hands back the same
    answer for the very same facts (the next commit of a watch, whose loader shares them) and
    scans facts decoded again; the entry points come out the same either way."""
    files = {**CLI, "tool/script.py": "from tool.work import job\nif __name__ == '__main__':\n    job()\n"}
    first = program_from_files(files)
    sites = script_sites(first)
    assert sites["tool/script.py"].main_guarded
    assert not sites["tool/cli.py"].main_guarded
    assert [expr for _, expr, _ in sites["tool/cli.py"].candidates] == [
        "click.group()",
        "cli.command()",
        "app.command()",
        "p.set_defaults",
    ]
    assert sites["tool/work.py"] == NO_SITES
    shared = replace(first, files={path: replace(source) for path, source in first.files.items()})
    again = script_sites(shared)
    assert all(again[path] is sites[path] for path in sites)
    decoded = program_from_files(files)
    fresh = script_sites(decoded)
    assert fresh == sites
    assert fresh["tool/cli.py"] is not sites["tool/cli.py"]
    warm = ProcessPathsExtractor().resolve(decoded)  # every file's sites remembered
    cold, _ = _paths(files)  # facts decoded again: every file scanned
    assert {d.logical_key: list(d.payload["chain"]) for d in warm.drafts} == cold
    assert "path:tool.script->subprocess.run" in cold


GRAPH = {
    "svc/__init__.py": "",
    "svc/main.py": "import requests\nfrom fastapi import FastAPI\napp = FastAPI()\n"
    "@app.get('/a')\ndef a():\n    left()\n    right()\n"
    "def left():\n    shared()\ndef right():\n    shared()\n"
    "def shared():\n    requests.get('u')\n    a()\n"
    "@app.get('/far')\ndef far():\n    one()\n"
    "def one():\n    two()\ndef two():\n    requests.post('u')\n"
    "@app.get('/none')\ndef none():\n    return 1\n",
}


def test_search_is_shortest_deterministic_cycle_safe_and_capped() -> None:
    """Among equal-length chains the first in dotted order is kept, the cycle back to the route ends,
    a route that reaches nothing yields nothing, and a depth cap hides farther sinks and is a
    ``depth_cap`` gap on the entry point it cut."""
    paths, extraction = _paths(GRAPH)
    assert paths["path:svc.main.a->requests.get"] == ["svc.main.a", "svc.main.left", "svc.main.shared"]
    assert paths["path:svc.main.far->requests.post"] == ["svc.main.far", "svc.main.one", "svc.main.two"]
    assert not any(k.startswith("path:svc.main.none") for k in paths)
    assert not extraction.gaps
    capped, extraction = _paths(GRAPH, "max_depth: 1\n")
    assert "path:svc.main.far->requests.post" not in capped
    assert sorted(g.reason for g in extraction.gaps) == ["depth_cap", "depth_cap"]


def test_celery_delay_and_first_party_sinks() -> None:
    """``task.delay()`` on a Celery task is a message-queue sink, and a repository may declare one
    of its own functions a sink (grounded on its definition)."""
    files = {
        "jobs.py": "from celery import shared_task\n@shared_task\ndef send(x): pass\n"
        "def audit(x): pass\n"
        "def main():\n    send.delay(1)\n    audit(2)\n\nif __name__ == '__main__':\n    main()\n"
    }
    paths, extraction = _paths(files, "sinks:\n  audit: [jobs.audit]\n")
    assert set(paths) == {"path:jobs->celery.Task.delay", "path:jobs->jobs.audit"}
    audit = next(d for d in extraction.drafts if d.logical_key == "path:jobs->jobs.audit")
    assert "sink" in {g.role for g in audit.grounding}
