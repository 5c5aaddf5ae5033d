"""The griffe side of the library-surface oracle, run as ``python -m kb_gates.griffe_surface``.

It runs in its own interpreter (griffe's module collection is large and lives as long as its
loader), reads ``{"roots": [...], "packages": [...]}`` as JSON on stdin and prints
``{"entries": [[package, name, target], ...], "loaded": [...], "failed": [...]}``. What it reports
and every correction it applies to griffe are described in ``kb_gates.griffe_oracle``; the
numbered differences referred to below are that module's.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

from kb_gates.griffe_corrections import (
    corrected_loader,
    imported_submodules,
    literal_all,
    modules_below,
    parsed,
    rebindings,
)


def surface(roots: list[str], packages: list[str]) -> dict[str, Any]:
    """Load every package with griffe and list each package ``__init__``'s exposed names."""
    loader = corrected_loader(roots)
    loaded: list[Any] = []
    failed: list[str] = []
    for name in packages:
        try:
            loaded.append(loader.load(name, try_relative_path=False))
        except Exception:  # a package griffe cannot load is reported, not fatal
            failed.append(name)
    loader.resolve_aliases(implicit=True, external=False)
    first_party = frozenset(packages)
    entries = [
        [package.path, name, _target(package.members.get(name), loader.modules_collection, first_party)]
        for top in loaded
        for package in _packages(top)
        for name in _names(package)
    ]
    return {"entries": entries, "loaded": sorted(m.path for m in loaded), "failed": failed}


def _packages(module: Any) -> Iterator[Any]:
    """``module`` and every package below it that has an ``__init__.py``."""
    return (m for m in modules_below(module) if m.is_init_module)


def _names(package: Any) -> list[str]:
    """Exposed names: non-empty ``exports``, else the public members (differences 2 to 5)."""
    exports = [e for e in package.exports or [] if isinstance(e, str)]
    if exports:
        return list(dict.fromkeys(exports))
    tree = parsed(package.filepath)
    if package.exports == [] and literal_all(tree):
        return []
    loaded = imported_submodules(package.path, tree)
    names = []
    for name, member in package.members.items():
        if name.startswith("_"):
            continue
        if member.is_alias or not member.is_module:
            if member.is_public:
                names.append(name)
            continue
        rebound = _rebinding(member)
        if rebound is not None:
            if rebound[1]:  # rebound by a redundant alias: public (differences 5 and 8)
                names.append(name)
        elif name in loaded:
            names.append(name)
    return names


def _rebinding(member: Any) -> tuple[str, bool] | None:
    """What Python binds where griffe keeps a submodule that its ``__init__`` rebinds (difference 5)."""
    parent = getattr(member, "parent", None)
    if member.is_alias or not member.is_module or parent is None or not parent.is_init_module:
        return None
    found = rebindings(parent.path, parsed(parent.filepath)).get(member.name)
    return found if found is not None and found[0] != member.path else None


def _target(member: Any, collection: Any, first_party: frozenset[str]) -> str | None:
    """The member's path after its alias chain, one hop at a time; a chain that leaves the loaded
    packages ends at its external name, one that dead-ends inside them is None."""
    import griffe

    seen: set[str] = set()
    while member is not None:
        rebound = _rebinding(member)
        if rebound is None and not member.is_alias:
            return str(member.path)
        path: str = rebound[0] if rebound is not None else member.target_path
        if path in seen:
            return None
        seen.add(path)
        try:
            member = collection.get_member(path)
        except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError):
            return None if path.split(".", 1)[0] in first_party else path
    return None


def main() -> None:
    """Child entry point: JSON arguments on stdin, the surface as JSON on stdout."""
    args = json.loads(sys.stdin.read())
    print(json.dumps(surface(args["roots"], args["packages"])))


if __name__ == "__main__":
    main()
