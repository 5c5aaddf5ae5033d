"""The independent library-surface oracle: griffe's static view of the same commit's packages.

Like the grimp oracle, the commit's Python files are exported to a temporary directory
(``grimp_oracle.export_tree``; files knowbase could not parse are exported empty) and griffe 2.4
runs in a fresh interpreter: ``GriffeLoader(search_paths=<import roots>, allow_inspection=False)``
loads every top-level package (purely static: nothing of the repository is imported or run),
``resolve_aliases(implicit=True, external=False)`` expands star imports across them, and each
package ``__init__``'s exposed names are reported as ``(package, name, target)``.

Names: ``Module.exports`` (``__all__`` after griffe's ``expand_exports``) when non-empty, else
the members whose ``is_public`` is true — the same notion as knowbase's: names merely imported
are private, star-imported ones public. Target: the member's path after following its alias
chain one ``target_path`` at a time through griffe's module collection; a chain that leaves the
loaded packages ends at its external name, one that dead-ends inside them is null. Packages
griffe cannot load are reported and left out of the comparison.

Deliberate differences between knowbase and griffe, and how the comparison handles each:

1. ``__all__.extend([...])`` / ``__all__.append("x")``: CPython honours them, griffe 2.4 does
   not read them. The oracle's griffe extension adds them to ``exports``, after griffe's own
   reading.
2. Dunder names (``__version__``, ``__getattr__``): griffe calls them public; knowbase follows
   the leading-underscore rule (CPython's ``import *``). Dropped from griffe's side.
3. Submodules: griffe makes every non-private submodule a public member of its package even when
   the ``__init__`` never imports it; knowbase lists a submodule only when the ``__init__``'s
   imports load it (``from . import sub``, ``from .sub import x``: CPython then binds ``sub``) or
   ``__all__`` names it. Submodules the ``__init__`` never imports are dropped from griffe's side.
4. An empty ``exports`` list: griffe gets ``[]`` both for ``__all__ = []`` and for an ``__all__``
   it cannot read, and then falls back to public names; knowbase exports nothing for a static
   empty ``__all__`` (CPython's ``import *`` binds nothing) and falls back only when it is dynamic.
   The oracle reads the ``__init__`` with ``ast``: when every ``__all__`` statement is a literal,
   an empty ``exports`` means no names.
5. A submodule its package's ``__init__`` rebinds with a ``from`` import
   (``from .checkout import checkout``, httpx's ``from .__version__ import __version__``,
   SQLAlchemy's ``from ._orm_constructors import _mapper_fn as mapper``): griffe keeps the
   submodule as the member; CPython, and knowbase, bind the imported object. Wherever griffe hands
   back such a submodule (as a member or along an alias chain) the oracle follows the import
   instead, through griffe's own collection, and the name counts as imported. (A submodule
   rebound by a ``def``/``class``/assignment in the ``__init__`` is not corrected: griffe has no
   object for it.)
6. ``if TYPE_CHECKING: X = int`` / ``else: class X: ...``: griffe 2.4 marks the whole ``if``
   statement, ``else`` branch included, as type-guarded (``runtime=False``), so a star import
   skips the runtime class and the re-exported name dead-ends (pydantic 1.x does this for 24
   names). CPython runs the ``else`` branch; the oracle's extension marks objects and aliases
   created there as runtime again.
7. Rebinding in ``if``/``except`` blocks: for attributes griffe keeps the first, non-exception
   binding; knowbase takes the later one, as Python would. Both are reported with the same
   target path, so only the target kinds (not compared) can differ.
8. Redundant aliases (``from .x import A as A``, ``import A as A``): the typing spec's explicit
   re-export, and griffe's documented convention for it (its official, separately distributed
   ``griffe-public-redundant-aliases`` extension); plain griffe calls them private imports.
   knowbase counts them; the oracle's extension marks such aliases public, as that one does.
9. Tuple unpacking (``EXT_CONTINUE, EXT_STOP = tuple(EventConstants)``): CPython binds every
   name; griffe 2.4 skips such assignments. The oracle's extension adds them as attributes.
10. ``__all__`` references below a module without ``__all__``: griffe's ``expand_exports`` returns
    early for a module that has no ``__all__`` and so never reaches its submodules, whose
    ``other.__all__`` references (Django's ``from .fields import __all__ as fields_all`` ...
    ``__all__ = fields_all + ...``) then stay unexpanded and are dropped, and star imports of
    those modules bind nothing. The oracle's loader expands every module's references before
    griffe expands star imports. (knowbase also reads a list literal held by a variable and
    ``__all__ = __all__ + [...]``; griffe reads neither, and those are not corrected.)

Known and not corrected (they show up as check evidence when they occur): a submodule rebound
by a definition in its ``__init__`` (5); ``__all__.extend`` before a later ``__all__ = [...]``
(griffe's order); an ``__all__`` that concatenates the ``__all__`` of a top-level package loaded
after it (griffe expands exports per package, in name order); star-import cycles, which Python
itself resolves by import order.

The corrections live in ``kb_gates.griffe_corrections``; ``kb_gates.griffe_surface`` is the child
process.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kb_gates.grimp_oracle import export_tree
from kb_resources.git.repo import GitRepo

Entry = tuple[str, str, str | None]
"""(package, exposed name, target dotted path or None)."""


@dataclass(frozen=True, slots=True)
class GriffeSurface:
    """griffe's exposed names of every package it loaded, and the packages that failed to load."""

    entries: frozenset[Entry]
    loaded: frozenset[str]
    failed: tuple[str, ...]


def griffe_surface(
    repo: GitRepo,
    files: Iterable[tuple[str, str]],
    *,
    roots: Iterable[str],
    packages: Iterable[str],
    blank: set[str],
) -> GriffeSurface:
    """Run griffe over ``packages`` exported from the commit's files (in a subprocess)."""
    packages = sorted(packages)
    if not packages:
        return GriffeSurface(frozenset(), frozenset(), ())
    with tempfile.TemporaryDirectory(prefix="kb-griffe-") as tmp:
        export = Path(tmp).resolve()
        export_tree(repo, export, files, blank)
        args = {
            "roots": [str(export / r) if r else str(export) for r in sorted(set(roots))],
            "packages": packages,
        }
        proc = subprocess.run(
            [sys.executable, "-m", "kb_gates.griffe_surface"],
            input=json.dumps(args),
            capture_output=True,
            text=True,
            check=False,
            cwd=tmp,
        )
    if proc.returncode != 0:
        raise RuntimeError(f"griffe failed: {proc.stderr.strip().splitlines()[-1:] or proc.returncode}")
    data = json.loads(proc.stdout)
    return GriffeSurface(
        entries=frozenset((p, n, t) for p, n, t in data["entries"]),
        loaded=frozenset(data["loaded"]),
        failed=tuple(data["failed"]),
    )
