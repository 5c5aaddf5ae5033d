"""The module map: which dotted Python module each `.py` path of a commit is.

Pure: it sees only the list of paths (no file system, no git), so the same commit always maps the
same way. The rules follow grimp and the way Python itself finds modules on ``sys.path``:

* A directory is a *package* when it holds an ``__init__.py``.
* A file's *import root* is its nearest ancestor directory that is not a package. A flat layout is
  rooted at the repository root (``""``), a ``src/`` layout at ``src``, several top-level packages
  under one root all work, and a ``tests/`` directory without ``__init__.py`` makes each test file a
  top-level module rooted at ``tests`` (what pytest's rootdir-relative import does).
* The module name is the path relative to its root with ``/`` -> ``.``, ``.py`` stripped and a
  trailing ``.__init__`` dropped: ``src/pkg/sub/__init__.py`` is ``pkg.sub``.
* A *package* directory whose name is not a Python identifier (or is a keyword), such as
  ``my-tool/__init__.py``'s ``my-tool``, cannot be imported: its files get the gap
  ``not_importable``. A module file's own name only has to be free of dots: ``0001_initial.py`` or
  ``2fa.py`` cannot appear in an ``import`` statement, but ``importlib.import_module`` loads them
  (Django loads every migration that way) and grimp counts them as modules, so they are modules
  here too. An ``__init__.py`` at the repository root, whose package name lies outside the
  repository, is ``not_importable``.
  The root directory itself may have any name (``my-scripts/x.py`` is module ``x`` rooted there).
* When several files would get the same name (``tests/conftest.py`` and ``tests/unit/conftest.py``
  when neither directory is a package, or ``a.py`` next to ``a/__init__.py``), exactly one keeps it:
  a package ``__init__.py`` first, then the shallowest root, then the smallest path. The others get
  the gap ``module_name_collision`` naming the winner. A module whose parent package was won by a
  file in another root is shadowed the same way (Python would look inside the winning package).

Names are decided parents first, so the result does not depend on the input order.
"""

from __future__ import annotations

import functools
import keyword
import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kb_assets.core.models import Gap

NOT_IMPORTABLE = "not_importable"
MODULE_NAME_COLLISION = "module_name_collision"
GAP_SOURCE = "modules"
_INIT = "__init__.py"


@dataclass(frozen=True, slots=True)
class ModuleMap:
    """Path <-> dotted module name for one commit, plus the files that got no name and why."""

    modules: Mapping[str, str]
    paths: Mapping[str, str]
    packages: frozenset[str]
    roots: tuple[str, ...]
    top_level: frozenset[str]
    gaps: tuple[Gap, ...]


@dataclass(frozen=True, slots=True)
class _Candidate:
    """A file that could be a module: where it is rooted and the name it would get."""

    path: str
    root: str
    name: str
    is_package: bool

    @property
    def rank(self) -> tuple[bool, int, str]:
        """Sort key of the collision rule: packages first, then shallowest root, then smallest path."""
        return (not self.is_package, _depth(self.root), self.path)


def map_modules(paths: Iterable[str]) -> ModuleMap:
    """Give every `.py` path its dotted module name, or a gap saying why it has none."""
    return _map_sorted(tuple(sorted({p for p in paths if p.endswith(".py")})))


@functools.lru_cache(maxsize=4)
def _map_sorted(files: tuple[str, ...]) -> ModuleMap:
    """``map_modules`` of sorted, distinct paths; cached because ingest, parse and load of one
    commit each ask for the same map (a pure function of the path set; the result is immutable)."""
    package_dirs = frozenset(posixpath.dirname(p) for p in files if posixpath.basename(p) == _INIT)
    gaps: list[Gap] = []
    by_name: dict[str, list[_Candidate]] = {}
    for path in files:
        candidate = _candidate(path, package_dirs)
        if isinstance(candidate, Gap):
            gaps.append(candidate)
        else:
            by_name.setdefault(candidate.name, []).append(candidate)
    winners: dict[str, _Candidate] = {}
    for name in sorted(by_name, key=lambda n: (n.count("."), n)):
        contenders = sorted(by_name[name], key=lambda c: c.rank)
        accepted = [c for c in contenders if _parent_is_own(c, winners, gaps)]
        if accepted:
            winners[name] = accepted[0]
            taken = f"module {name} is taken by {accepted[0].path}"
            gaps.extend(_collision(loser.path, taken) for loser in accepted[1:])
    return _assemble(winners, gaps)


def _candidate(path: str, package_dirs: frozenset[str]) -> _Candidate | Gap:
    """Root a path at its nearest non-package ancestor and derive its module name."""
    directory = posixpath.dirname(path)
    is_package = posixpath.basename(path) == _INIT
    if directory == "" and is_package:
        return _gap(path, NOT_IMPORTABLE, "an __init__.py at the repository root names no importable package")
    root = directory
    while root in package_dirs and root != "":
        root = posixpath.dirname(root)
    relative = path[len(root) + 1 :] if root else path
    parts = relative[: -len(".py")].split("/")
    if is_package:
        parts = parts[:-1]
    packages = parts if is_package else parts[:-1]
    bad = [part for part in packages if not part.isidentifier() or keyword.iskeyword(part)]
    if not is_package and (not parts[-1] or "." in parts[-1]):
        bad.append(parts[-1])
    if bad:
        return _gap(path, NOT_IMPORTABLE, f"{bad[0]!r} is not a valid Python module name")
    return _Candidate(path=path, root=root, name=".".join(parts), is_package=is_package)


def _parent_is_own(candidate: _Candidate, winners: Mapping[str, _Candidate], gaps: list[Gap]) -> bool:
    """Whether the package above ``candidate`` is its own directory's; records a shadowing gap if not."""
    parent_name, dot, _ = candidate.name.rpartition(".")
    if not dot:
        return True
    own_dir = posixpath.dirname(candidate.path)
    if candidate.is_package:
        own_dir = posixpath.dirname(own_dir)
    expected = posixpath.join(own_dir, _INIT)
    winner = winners.get(parent_name)
    if winner is not None and winner.path == expected:
        return True
    holder = winner.path if winner is not None else "no importable file"
    shadowed = f"module {candidate.name} is shadowed: package {parent_name} is {holder}"
    gaps.append(_collision(candidate.path, shadowed))
    return False


def _assemble(winners: Mapping[str, _Candidate], gaps: list[Gap]) -> ModuleMap:
    """Build the ModuleMap from the chosen files, with every collection in a stable order."""
    chosen = sorted(winners.values(), key=lambda c: c.path)
    return ModuleMap(
        modules={c.path: c.name for c in chosen},
        paths={c.name: c.path for c in sorted(chosen, key=lambda c: c.name)},
        packages=frozenset(c.name for c in chosen if c.is_package),
        roots=tuple(sorted({c.root for c in chosen})),
        top_level=frozenset(c.name.partition(".")[0] for c in chosen),
        gaps=tuple(sorted(gaps, key=lambda g: (g.path, g.reason, g.detail))),
    )


def _collision(path: str, detail: str) -> Gap:
    """The gap of a file whose module name went to another file."""
    return _gap(path, MODULE_NAME_COLLISION, detail)


def _gap(path: str, reason: str, detail: str) -> Gap:
    """A module-map gap for one file."""
    return Gap(path=path, reason=reason, detail=detail, source=GAP_SOURCE)


def _depth(root: str) -> int:
    """How many directories deep an import root is ("" is 0)."""
    return root.count("/") + 1 if root else 0
