"""What ``kb describe`` describes, and the grounding of each: the target's own spans.

* ``route``, ``entity``, ``event_handler``, ``process_path``: one per deterministic unit of that
  kind, grounded exactly as the unit is (same spans, same roles);
* ``module``: each non-package module, grounded on its module span (the whole file);
* ``package``: each package, grounded on its ``__init__`` module span (role ``package``) and the
  module spans of its direct members — modules and subpackages (role ``member``, at most
  ``MAX_MEMBERS``); its prompt synthesizes their summaries, the import graph between them and the
  package's public surface;
* ``repo`` (target ``.``): the bounded top-level surface, the module spans of at most
  ``MAX_SURFACE`` top-level packages and non-test modules (role ``surface``).

Targets are built in stages: leaves first, then packages deepest first (a package's prompt uses
its members' summaries), the repository last.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from kb_assets.core.describe.facts import module_facts, package_facts, repo_facts
from kb_assets.core.models import JSON, Grounding
from kb_assets.core.program import Program, SourceFile

TargetKind = Literal["route", "entity", "event_handler", "module", "package", "process_path", "repo"]

TARGET_KINDS: tuple[TargetKind, ...] = (
    "route",
    "entity",
    "event_handler",
    "process_path",
    "module",
    "package",
    "repo",
)

UNIT_KINDS: Mapping[str, TargetKind] = {
    "api_route": "route",
    "entity": "entity",
    "event_handler": "event_handler",
    "process_path": "process_path",
}
"""Deterministic kinds whose units are described one by one."""

MAX_MEMBERS = 60
MAX_SURFACE = 40
REPO_TARGET = "."


@dataclass(frozen=True, slots=True)
class Unit:
    """A deterministic unit of the snapshot, as the describe pass needs it."""

    kind: str
    logical_key: str
    payload: Mapping[str, JSON]
    grounding: tuple[Grounding, ...]


@dataclass(frozen=True, slots=True)
class Target:
    """One thing to describe: its name, its grounding, the deterministic facts shown with it."""

    kind: TargetKind
    target: str
    grounding: tuple[Grounding, ...]
    facts: Mapping[str, JSON]
    stage: int = 0
    members: tuple[str, ...] = field(default=())
    """Targets whose summaries this one's prompt synthesizes (a package's members)."""

    @property
    def logical_key(self) -> str:
        """``describe:TARGET`` (CONTRACT.md)."""
        return f"describe:{self.target}"


def build_targets(program: Program, units: Sequence[Unit]) -> list[Target]:
    """Every target of the commit, in stage order then logical key (one per logical key)."""
    found: list[Target] = [*_unit_targets(units), *_module_targets(program, units)]
    found += _package_targets(program, units)
    repo = _repo_target(program, units, stage=1 + max((t.stage for t in found), default=0))
    if repo is not None:
        found.append(repo)
    unique: dict[str, Target] = {}
    for target in found:
        unique.setdefault(target.logical_key, target)  # a name both module and unit: first kind wins
    return sorted(unique.values(), key=lambda t: (t.stage, t.logical_key))


def _unit_targets(units: Iterable[Unit]) -> list[Target]:
    targets = []
    for unit in units:
        kind = UNIT_KINDS.get(unit.kind)
        if kind is None or not unit.grounding:
            continue
        name = unit.logical_key.partition(":")[2]
        facts = {"unit": unit.logical_key, **dict(unit.payload)}
        targets.append(Target(kind, name, tuple(sorted(set(unit.grounding))), facts))
    return targets


def _module_span(source: SourceFile, role: str) -> Grounding:
    return source.ground(0, role)


def _module_targets(program: Program, units: Sequence[Unit]) -> list[Target]:
    edges = _import_edges(units)
    return [
        Target("module", source.module, (_module_span(source, "module"),), module_facts(source, edges))
        for source in program.modules()
        if source.module is not None and not source.is_package and source.spans
    ]


def _package_targets(program: Program, units: Sequence[Unit]) -> list[Target]:
    sources = {s.module: s for s in program.modules() if s.module is not None}
    packages = sorted(m for m, s in sources.items() if s.is_package)
    depth = max((p.count(".") for p in packages), default=0)
    edges = _import_edges(units)
    public = _public_names(units)
    targets = []
    for package in packages:
        members = sorted(m for m in sources if m.rpartition(".")[0] == package and m != package)
        kept = members[:MAX_MEMBERS]
        grounding = [_module_span(sources[package], "package")]
        grounding += [_module_span(sources[m], "member") for m in kept]
        member_sources = [sources[m] for m in members]
        facts = package_facts(sources[package], member_sources, edges, public.get(package, []), MAX_MEMBERS)
        stage = 1 + depth - package.count(".")
        targets.append(Target("package", package, tuple(sorted(set(grounding))), facts, stage, tuple(kept)))
    return targets


def _repo_target(program: Program, units: Sequence[Unit], *, stage: int) -> Target | None:
    sources = {s.module: s for s in program.modules() if s.module is not None}
    tops = [m for m in sorted(program.module_map.top_level) if m in sources]
    packages = [m for m in tops if sources[m].is_package]
    modules = [m for m in tops if not sources[m].is_package and not is_test_path(sources[m].path)]
    surface = (packages + modules)[:MAX_SURFACE]
    if not surface:
        return None
    grounding = tuple(sorted({_module_span(sources[m], "surface") for m in surface}))
    counts = Counter(u.kind for u in units)
    facts = repo_facts(surface, packages, tops, dict(sorted(counts.items())))
    return Target("repo", REPO_TARGET, grounding, facts, stage, tuple(surface))


def _import_edges(units: Iterable[Unit]) -> list[tuple[str, str, bool]]:
    """(importer, imported, external) of every import edge unit, sorted."""
    edges = {
        (str(u.payload.get("importer")), str(u.payload.get("imported")), bool(u.payload.get("external")))
        for u in units
        if u.kind == "import_edge"
    }
    return sorted(edges)


def _public_names(units: Iterable[Unit]) -> dict[str, list[str]]:
    """Package -> its public names (from ``public_symbol`` units), sorted."""
    found: dict[str, set[str]] = defaultdict(set)
    for u in units:
        if u.kind == "public_symbol":
            found[str(u.payload.get("package"))].add(str(u.payload.get("name")))
    return {package: sorted(names) for package, names in found.items()}


def is_test_path(path: str) -> bool:
    """Test code (a tests/ folder, test_*.py, *_test.py, conftest.py): left out of the repo surface."""
    parts = path.split("/")
    name = parts[-1]
    in_tests = any(part in ("tests", "test", "testing") for part in parts[:-1])
    return in_tests or name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"
