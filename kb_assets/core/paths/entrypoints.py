"""Entry points of a program: where execution starts from outside (routes, events, CLI).

* ``route`` — API route handlers, as the registered ``api_routes`` extractor resolves them;
* ``event`` — event handlers (validators, startup/lifespan, SQLAlchemy listeners), from the
  ``event_handlers`` extractor;
* ``cli`` — a module's ``if __name__ == "__main__":`` block (the module is the entry point, and only
  the calls inside the block start paths), a ``__main__.py`` module (all its top-level code), click
  and typer commands (``@click.command()``, ``@cli.command()`` on a click group, ``@app.command()``
  on a ``typer.Typer()``), and argparse handlers (``parser.set_defaults(func=handler)``).

The other extractors are looked up in the registry at run time and their pure ``resolve`` is run
once per program (memoized), so this module needs nothing from them but their payloads'
``handler``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kb_assets.core.callgraph.graph import CallGraph
from kb_assets.core.callgraph.index import ScopeRef
from kb_assets.core.callgraph.values import Ext, ExtInst, Fn
from kb_assets.core.extractors.base import Extraction, Extractor
from kb_assets.core.models import JSON, Grounding
from kb_assets.core.paths.script_sites import COMMAND_ENDINGS, NO_SITES, script_sites
from kb_assets.core.program import Program
from kb_assets.core.program_memo import PerProgram

_CLI_LIBRARIES = ("click.", "typer.", "asyncclick.", "cloup.")
_UPSTREAM = (("api_routes", "route"), ("event_handlers", "event"))
_UPSTREAM_IDS = frozenset(extractor_id for extractor_id, _ in _UPSTREAM)


@dataclass(frozen=True, slots=True, order=True)
class EntryPoint:
    """Where a process path starts: a function (or a module, for CLI scripts)."""

    dotted: str
    kind: str
    details: tuple[str, ...] = ()
    main_only: bool = False
    """Only the calls under ``if __name__ == "__main__":`` start paths (script modules)."""
    grounding: tuple[Grounding, ...] = ()
    """What the upstream artifact that made it an entry point is grounded on (routers, registrations)."""


def upstream(program: Program, extractor_id: str) -> Extraction | None:
    """The ``resolve`` result of a registered extractor for this program (None when unregistered)."""
    from kb_assets.core.extractors.registry import extractor  # the registry imports this module

    resolved = _resolved(program)
    if extractor_id not in resolved:
        try:
            found = extractor(extractor_id)
        except KeyError:
            return None
        resolved[extractor_id] = found.resolve(program)
    return resolved[extractor_id]


_resolved: PerProgram[dict[str, Extraction]] = PerProgram(lambda program: {})
"""Per program: the upstream extractions asked for so far, by extractor id."""


def resolve_shared(program: Program, ex: Extractor) -> Extraction:
    """``ex.resolve(program)``; for a registered extractor that entry points read (routes, event
    handlers), the one ``upstream`` hands out too, so that a run resolves it once for its own
    asset and for the process paths (~0.1 s of every Django commit, ~0.2 s of a full index)."""
    from kb_assets.core.extractors.registry import extractor  # the registry imports this module

    if ex.extractor_id not in _UPSTREAM_IDS or extractor(ex.extractor_id) is not ex:
        return ex.resolve(program)
    found = upstream(program, ex.extractor_id)
    assert found is not None  # registered: just looked up
    return found


def entry_points(program: Program, graph: CallGraph) -> list[EntryPoint]:
    """Every entry point of the program, one per dotted path (kinds and details merged)."""
    found: dict[str, list[EntryPoint]] = {}
    for extractor_id, kind in _UPSTREAM:
        extraction = upstream(program, extractor_id)
        for draft in extraction.drafts if extraction is not None else ():
            handler = draft.payload.get("handler")
            if isinstance(handler, str) and handler in graph.nodes:
                detail = (_detail(kind, draft.payload),)
                found.setdefault(handler, []).append(
                    EntryPoint(handler, kind, detail, grounding=draft.grounding)
                )
    for entry in _cli(program, graph):
        found.setdefault(entry.dotted, []).append(entry)
    return [_merge(entries) for _, entries in sorted(found.items())]


def _detail(kind: str, payload: object) -> str:
    """``GET /items`` for a route, the event names for an event handler."""
    data = payload if isinstance(payload, dict) else {}
    if kind == "route":
        return f"{data.get('method')} {data.get('path')}"
    events = sorted({str(r.get("event")) for r in data.get("registrations", []) if isinstance(r, dict)})
    return ",".join(events)


def _merge(entries: list[EntryPoint]) -> EntryPoint:
    """One entry point per dotted path: the first kind in route/event/cli order, every detail."""
    order = {"route": 0, "event": 1, "cli": 2}
    entries.sort(key=lambda e: (order[e.kind], e.details))
    details = tuple(sorted({d for e in entries for d in e.details}))
    main_only = all(e.main_only for e in entries)
    grounding = tuple(sorted({g for e in entries for g in e.grounding}))
    return EntryPoint(entries[0].dotted, entries[0].kind, details, main_only, grounding)


def _cli(program: Program, graph: CallGraph) -> list[EntryPoint]:
    """Script modules, ``__main__`` modules, click/typer commands and argparse handlers, in
    path and scope order, from each file's candidate sites (``script_sites``)."""
    ev = graph.evaluator
    sites = script_sites(program)
    out: list[EntryPoint] = []
    for path in sorted(ev.scopes.records):
        if not ev.scopes.records[path]:
            continue
        found = sites.get(path, NO_SITES)
        module = ev.scopes.module(ScopeRef(path, 0))
        if module == "__main__" or module.endswith(".__main__"):
            out.append(EntryPoint(module, "cli", ("__main__",)))
        elif found.main_guarded:
            out.append(EntryPoint(module, "cli", ("__main__",), main_only=True))
        for scope, expr, extra in found.candidates:
            entry = _command(graph, ScopeRef(path, scope), expr, extra)
            if entry is not None:
                out.append(entry)
    return out


def _command(graph: CallGraph, ref: ScopeRef, expr: str, extra: Mapping[str, JSON]) -> EntryPoint | None:
    """A click/typer command decorator or an argparse ``set_defaults(func=...)`` site."""
    ev = graph.evaluator
    keywords = extra.get("k") or {}
    if expr.endswith(".set_defaults") and "func" in keywords:
        handler = ev.expr(ref, str(keywords["func"]))
        if handler is not None and isinstance(handler.value, Fn):
            return EntryPoint(handler.value.defn.dotted, "cli", ("argparse",))
        return None
    decorated = extra.get("a")
    if not extra.get("d") or not isinstance(decorated, list) or not expr.endswith(COMMAND_ENDINGS):
        return None
    callee = expr.removesuffix("()")
    found = ev.expr(ref, callee)
    base = callee.rpartition(".")[0]
    owner = ev.expr(ref, base) if base else None
    if not _is_cli(graph, found.value if found else None) and not _is_cli(
        graph, owner.value if owner else None
    ):
        return None
    target = ev.scopes.defn(ScopeRef(ref.path, int(str(decorated[0])[1:])))
    return EntryPoint(target.dotted, "cli", (callee.rsplit(".", 1)[-1],))


def _is_cli(graph: CallGraph, value: object) -> bool:
    """click/typer themselves, a ``typer.Typer()``/click group object, or a function made a click
    group by its decorator."""
    if isinstance(value, Ext | ExtInst):
        name = value.name if isinstance(value, Ext) else value.type
        return name.startswith(_CLI_LIBRARIES) and name.rsplit(".", 1)[-1] in ("command", "group", "Typer")
    if isinstance(value, Fn) and value.defn.scope is not None:
        parent = graph.evaluator.scopes.parent(ScopeRef(value.defn.path, value.defn.scope))
        for site in graph.evaluator.scopes.record(parent).get("calls", []) if parent is not None else []:
            extra = site[2] if len(site) > 2 else {}
            if extra.get("a") == [f"#{value.defn.scope}"] and str(site[0]).rstrip("()").endswith("group"):
                return True
    return False
