"""Independent check of the ``entities`` extractor: ask the frameworks themselves.

Indexes a repository with ``kb index`` (unless ``--no-index``), reads ``kb export --kind entity``,
then imports the repository's model modules in a subprocess (``--python``: any interpreter with
the project's dependencies; default: this one) and asks each framework what it sees:
pydantic ``model_fields`` (v2) / ``__fields__`` (v1), ``dataclasses.fields``, ``attrs.fields``,
SQLAlchemy's mapper (``inspect(cls).attrs``, after ``configure_mappers()`` so backrefs count),
SQLModel (``model_fields``, plus the mapper's attributes for ``table=True``). Only modules that
import cleanly are compared, on both sides. Prints agreement on names and on fields, and every
difference.

References agree when the entities named in the fields' resolved types (``typing.get_args``
walked; ``Literal`` skipped) plus the mapper's relationship targets equal knowbase's
``references``, both restricted to the entities both sides see.

Fields agree when the lists are equal, in order. For mapped classes (SQLAlchemy, SQLModel tables)
the mapper lists relationships and ``column_property`` before the columns, so there the *set* must
be equal and the order of the plain table columns must match the mapper's.

Usage: ``python bench/eval_entities.py REPO [--python PY] [--kb-home DIR] [--no-index] [--direct]``
(``kb`` runs as ``python -m kb_assets.cli.main`` from this checkout; ``--direct`` skips the store.)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's kb_assets, not the one installed in the venv

from kb_assets.core.modules import map_modules  # noqa: E402

TOKENS = (b"pydantic", b"sqlalchemy", b"sqlmodel", b"dataclass", b"attr", b"BaseModel", b"Base", b"Model")
SKIP = ("setup", "conftest", "noxfile", "__main__")
PROBE = Path(__file__).with_name("entities_probe.py")


def kb(args: list[str], repo: Path, home: str) -> str:
    """Run the ``kb`` CLI of this checkout and return its stdout."""
    env = {**os.environ, "KB_HOME": home}
    argv = [sys.executable, "-m", "kb_assets.cli.main", *args, str(repo)]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT, check=False)
    if proc.returncode != 0:
        sys.exit(f"kb {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return proc.stdout


def candidates(repo: Path, also: frozenset[str] = frozenset()) -> dict[str, list[tuple[str, str]]]:
    """Import root -> [(module, path)] of the modules that may define models: those naming a
    framework, and ``also`` (every module where knowbase found an entity, e.g. one that only
    subclasses a first-party model)."""
    listed = subprocess.run(["git", "ls-files", "*.py"], cwd=repo, capture_output=True, text=True, check=True)
    module_map = map_modules(listed.stdout.split())
    roots: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for path, module in sorted(module_map.modules.items()):
        if module.rsplit(".", 1)[-1] in SKIP:
            continue
        data = (repo / path).read_bytes()
        if module in also or (b"class " in data and any(t in data for t in TOKENS)):
            stem = path.removesuffix(".py").removesuffix("/__init__")
            root = stem[: -len(module.replace(".", "/"))].rstrip("/")
            roots[root].append((module, path))
    return roots


def framework_view(
    repo: Path, python: str, also: frozenset[str] = frozenset()
) -> tuple[dict[str, Any], dict[str, str], set[str]]:
    """Entities the frameworks report, the modules that failed to import (with the error), and the
    modules imported."""
    plan = {root: [m for m, _ in mods] for root, mods in candidates(repo, also).items()}
    with tempfile.TemporaryDirectory() as tmp:
        plan_file, out_file = Path(tmp, "plan.json"), Path(tmp, "out.json")
        plan_file.write_text(json.dumps({"repo": str(repo), "roots": plan}))
        argv = [python, str(PROBE), str(plan_file), str(out_file)]
        # cwd: a scratch directory, since importing an application may write files where it runs
        proc = subprocess.run(argv, capture_output=True, text=True, cwd=tmp, check=False)
        if not out_file.exists():
            sys.exit(f"probe failed:\n{proc.stderr[-3000:]}")
        result = json.loads(out_file.read_text())
    return result["classes"], result["failed"], set(result["imported"])


def direct(repo: Path, paths: list[str]) -> dict[str, Any]:
    """The extractor's entities computed in-process (same collect + resolve as ``kb index``)."""
    from kb_assets.core.blobs import analyze_blob, decode_facts, encode_facts
    from kb_assets.core.extractors.entities import EntitiesExtractor
    from kb_assets.core.extractors.registry import COLLECTORS
    from kb_assets.core.program import Program, SourceFile
    from kb_assets.core.spans import ParseLimits

    module_map, extractor = map_modules(paths), EntitiesExtractor()
    files = {}
    for path in sorted(paths):
        parsed = analyze_blob(path, (repo / path).read_bytes(), (extractor,), ParseLimits(), COLLECTORS)
        if parsed.spans:
            facts = decode_facts(encode_facts(parsed.facts))
            module = module_map.modules.get(path)
            files[path] = SourceFile(path, path, module, path.endswith("__init__.py"), parsed.spans, facts)
    extraction = extractor.resolve(Program("0" * 40, files, module_map))
    for gap in extraction.gaps:
        print(f"gap {gap.path}:{gap.line}: {gap.reason} {gap.detail}")
    return {d.payload["name"]: dict(d.payload) for d in extraction.drafts}


def agree(kb_entity: dict[str, Any], fw: dict[str, Any]) -> bool:
    """Whether knowbase's fields match the framework's (see the module docstring)."""
    mine, theirs = kb_entity["fields"], fw["fields"]
    if fw.get("columns") is None:
        return bool(mine == theirs)
    columns = fw["columns"]
    return set(mine) == set(theirs) and [f for f in mine if f in columns] == columns


def refs_agree(kb_entity: dict[str, Any], fw: dict[str, Any], both: set[str]) -> bool:
    """Whether the referenced entities agree, among the entities both sides see (the framework's
    side: the classes named in the fields' resolved types and the mapper's relationship targets)."""
    return set(kb_entity["references"]) & both == set(fw.get("refs", [])) & both


def compare(
    kb_entities: dict[str, Any], fw: dict[str, Any], failed: dict[str, str], imported: set[str]
) -> None:
    """Print agreement figures and every difference."""
    mine = {n: e for n, e in kb_entities.items() if module_of(n, kb_entities) not in failed}
    names_kb, names_fw = set(mine), set(fw)
    both = names_kb & names_fw
    unverified = sorted(n for n in names_kb - names_fw if module_of(n, kb_entities) not in imported)
    extra = sorted(names_kb - names_fw - set(unverified))
    missing = sorted(names_fw - names_kb)
    union = len(both) + len(extra) + len(missing)
    fields_ok = [n for n in sorted(both) if agree(mine[n], fw[n])]
    print(f"names: {len(both)}/{union} = {100 * len(both) / max(union, 1):.1f}% agreement")
    print(f"fields: {len(fields_ok)}/{len(both)} = {100 * len(fields_ok) / max(len(both), 1):.1f}% agreement")
    by_framework: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for n in both | set(extra) | set(missing):
        counts = by_framework[(fw.get(n) or mine.get(n) or {}).get("framework", "?")]
        counts[0] += 1
        counts[1] += n in both
        counts[2] += n in fields_ok
    breakdown = ", ".join(
        f"{k} {v[1]}/{v[0]} names, {v[2]} fields ok" for k, v in sorted(by_framework.items())
    )
    print(f"by framework: {breakdown}")
    refs_ok = [n for n in sorted(both) if refs_agree(mine[n], fw[n], both)]
    print(f"references: {len(refs_ok)}/{len(both)} = {100 * len(refs_ok) / max(len(both), 1):.1f}% agreement")
    print(f"framework labels differing: {sum(mine[n]['framework'] != fw[n]['framework'] for n in both)}")
    print(
        f"modules failed to import: {len(failed)}; kb entities there (unverified): "
        f"{sum(module_of(n, kb_entities) in failed for n in kb_entities)}; kb entities not imported: "
        f"{len(unverified)}"
    )
    differences(mine, fw, failed, missing=missing, extra=extra, fields_differ=both - set(fields_ok))
    for n in sorted(both - set(refs_ok)):
        theirs = sorted(set(fw[n]["refs"]) & both)
        print(f"  REFS    {n}\n     kb: {mine[n]['references']}\n     fw: {theirs}")


def differences(
    mine: dict[str, Any],
    fw: dict[str, Any],
    failed: dict[str, str],
    *,
    missing: list[str],
    extra: list[str],
    fields_differ: set[str],
) -> None:
    """Print every difference: missing and extra entities, field lists, labels, import failures."""
    both = set(mine) & set(fw)
    for n in missing:
        print(f"  MISSING {n} ({fw[n]['framework']}): {fw[n]['fields']}")
    for n in extra:
        print(f"  EXTRA   {n} ({mine[n]['framework']}): {mine[n]['fields']}")
    for n in sorted(fields_differ):
        print(
            f"  FIELDS  {n} ({fw[n]['framework']})\n     kb: {mine[n]['fields']}\n     fw: {fw[n]['fields']}"
            + (f"\n     columns: {fw[n]['columns']}" if fw[n].get("columns") is not None else "")
        )
    for n in sorted(both):
        if mine[n]["framework"] != fw[n]["framework"]:
            print(f"  LABEL   {n}: kb {mine[n]['framework']} fw {fw[n]['framework']}")
    for module, error in sorted(failed.items()):
        print(f"  IMPORT  {module}: {error}")


def module_of(name: str, entities: dict[str, Any]) -> str:
    """The module of an entity (its ``module`` as exported, else the dotted path's prefix)."""
    return str(entities.get(name, {}).get("module") or name.rsplit(".", 1)[0])


def main() -> None:
    """Parse arguments, run both sides, print the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--kb-home", default="/tmp/kbhome-entities")
    parser.add_argument("--no-index", action="store_true")
    parser.add_argument(
        "--direct", action="store_true", help="run the extractor in-process, not kb index/export"
    )
    args = parser.parse_args()
    repo = args.repo.resolve()
    listed = subprocess.run(["git", "ls-files", "*.py"], cwd=repo, capture_output=True, text=True, check=True)
    module_map = map_modules(listed.stdout.split())
    if args.direct:
        kb_entities = direct(repo, listed.stdout.split())
    else:
        if not args.no_index:
            kb(["index"], repo, args.kb_home)
        exported = kb(["export", "--kind", "entity"], repo, args.kb_home).splitlines()
        kb_entities = {r["payload"]["name"]: r["payload"] for r in map(json.loads, exported)}
    for name, payload in kb_entities.items():
        payload["module"] = max(
            (m for m in module_map.paths if name.startswith(f"{m}.")), key=len, default=None
        )
    modules = frozenset(str(p["module"]) for p in kb_entities.values() if p.get("module"))
    fw, failed, imported = framework_view(repo, args.python, modules)
    print(f"{repo.name}: kb {len(kb_entities)} entities, frameworks {len(fw)} in imported modules")
    compare(kb_entities, fw, failed, imported)


if __name__ == "__main__":
    main()
