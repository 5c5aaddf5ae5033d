"""What the library-surface oracle corrects in griffe 2.4, and the ``ast`` reading it needs for it.

Imported only by the oracle's child process (``griffe_surface``). Each correction is one of the
numbered differences documented in ``kb_gates.griffe_oracle``: a place where griffe's static model
departs from what CPython binds, and where knowbase follows CPython.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

Rebinding = tuple[str, bool]
"""(absolute path of what a ``from`` import binds, whether it was a redundant alias)."""


def corrected_loader(search_paths: list[str]) -> Any:
    """A static ``GriffeLoader`` with the oracle's extension, whose export expansion reaches every
    module (difference 10)."""
    import griffe

    class Loader(griffe.GriffeLoader):
        _inside = False

        def expand_exports(self, module: Any, seen: set[str] | None = None) -> None:
            if self._inside:
                return super().expand_exports(module, seen)
            self._inside = True
            try:
                super().expand_exports(module, seen)
                for each in modules_below(module):
                    if any(not isinstance(e, str) for e in each.exports or []):
                        super().expand_exports(each, set())
            finally:
                self._inside = False
            return None

    extensions = griffe.load_extensions(corrections())
    return Loader(search_paths=search_paths, allow_inspection=False, extensions=extensions)


def modules_below(module: Any) -> Iterator[Any]:
    """Every module object below ``module`` (itself included)."""
    yield module
    for member in list(module.members.values()):
        if not member.is_alias and member.is_module:
            yield from modules_below(member)


def corrections() -> Any:
    """The oracle's griffe extension (differences 1, 6, 8 and 9)."""
    import griffe

    class Corrections(griffe.Extension):
        def on_instance(self, *, node: ast.AST | Any, obj: Any, agent: Any, **kwargs: Any) -> None:
            if in_type_checking_else(node):
                obj.runtime = True  # difference 6

        def on_alias_instance(self, *, node: ast.AST | Any, alias: Any, agent: Any, **kwargs: Any) -> None:
            if in_type_checking_else(node):
                alias.runtime = True  # difference 6
            if isinstance(node, ast.Import | ast.ImportFrom) and any(
                a.asname == a.name == alias.name for a in node.names
            ):
                alias.public = True  # difference 8

        def on_module_members(self, *, node: ast.AST | Any, mod: Any, agent: Any, **kwargs: Any) -> None:
            if not isinstance(node, ast.Module):
                return
            for call in all_calls(node):  # difference 1
                value = call.args[0]
                if isinstance(call.func, ast.Attribute) and call.func.attr == "append":
                    value = ast.List(elts=[value], ctx=ast.Load())
                fake = ast.Assign(targets=[ast.Name("__all__", ast.Store())], value=value, lineno=call.lineno)
                mod.exports = [*(mod.exports or []), *griffe.safe_get__all__(fake, mod)]
            for name, stmt in unpacked_names(node):  # difference 9
                if name not in mod.members:
                    mod.set_member(
                        name, griffe.Attribute(name, lineno=stmt.lineno, endlineno=stmt.end_lineno)
                    )

    return Corrections()


@functools.cache
def parsed(filepath: Path) -> ast.Module:
    """The parsed source of one module file (each ``__init__`` is read once)."""
    return ast.parse(Path(filepath).read_text(encoding="utf-8"))


def module_level(module: ast.Module) -> Iterator[ast.stmt]:
    """Statements at module level, through compound statements, outside functions and classes."""
    stack: list[ast.stmt] = list(reversed(module.body))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        yield node
        stack.extend(reversed([c for c in ast.iter_child_nodes(node) if isinstance(c, ast.stmt)]))


def all_calls(module: ast.Module) -> Iterator[ast.Call]:
    """Module-level ``__all__.extend(x)`` / ``__all__.append(x)`` calls."""
    for node in module_level(module):
        call = node.value if isinstance(node, ast.Expr) else None
        if (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and isinstance(call.func.value, ast.Name)
            and call.func.value.id == "__all__"
            and call.func.attr in ("extend", "append")
            and len(call.args) == 1
        ):
            yield call


def unpacked_names(module: ast.Module) -> Iterator[tuple[str, ast.Assign]]:
    """Names bound by module-level tuple/list unpacking (``A, B = ...``), which griffe skips."""
    for node in module_level(module):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Tuple | ast.List):
                    yield from ((n.id, node) for n in ast.walk(target) if isinstance(n, ast.Name))


def in_type_checking_else(node: Any) -> bool:
    """Whether an AST node sits in the ``else`` branch of an ``if TYPE_CHECKING:`` statement."""
    child, parent = node, getattr(node, "parent", None)
    while isinstance(parent, ast.AST):
        if isinstance(parent, ast.If) and any(child is n for n in parent.orelse):
            test = parent.test
            name = test.attr if isinstance(test, ast.Attribute) else getattr(test, "id", "")
            if name == "TYPE_CHECKING":
                return True
        child, parent = parent, getattr(parent, "parent", None)
    return False


def literal_all(module: ast.Module) -> bool:
    """Whether the module assigns ``__all__`` and every such statement is a literal (difference 4)."""
    values: list[ast.expr | None] = [
        node.value
        for node in module_level(module)
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign)
        and any(isinstance(t, ast.Name) and t.id == "__all__" for t in _targets(node))
    ]
    values += [arg for call in all_calls(module) for arg in call.args]
    return bool(values) and all(v is not None and _is_literal(v) for v in values)


def imported_submodules(package: str, module: ast.Module) -> set[str]:
    """First names below ``package`` that its ``__init__``'s imports load (difference 3)."""
    found: set[str] = set()
    for node in module_level(module):
        if isinstance(node, ast.ImportFrom):
            base = _absolute(package, node.level, node.module)
            if base == package:
                found.update(alias.name for alias in node.names)
            elif base is not None and base.startswith(f"{package}."):
                found.add(base[len(package) + 1 :].split(".", 1)[0])
        elif isinstance(node, ast.Import):
            prefix = f"{package}."
            found.update(
                a.name[len(prefix) :].split(".", 1)[0] for a in node.names if a.name.startswith(prefix)
            )
    return found


def rebindings(package: str, module: ast.Module) -> dict[str, Rebinding]:
    """For each name a module-level ``from`` import binds (the last one wins), what it binds."""
    found: dict[str, Rebinding] = {}
    for node in module_level(module):
        base = _absolute(package, node.level, node.module) if isinstance(node, ast.ImportFrom) else None
        for alias in node.names if isinstance(node, ast.ImportFrom) and base is not None else []:
            if alias.name != "*":
                found[alias.asname or alias.name] = (f"{base}.{alias.name}", alias.asname == alias.name)
    return found


def _absolute(package: str, level: int, module: str | None) -> str | None:
    """The absolute module of ``from <level dots><module> import`` inside ``package``'s ``__init__``."""
    if level == 0:
        return module
    parts = package.split(".")
    if level - 1 >= len(parts):
        return None
    base = parts[: len(parts) - (level - 1)]
    return ".".join([*base, module] if module else base)


def _targets(node: ast.Assign | ast.AugAssign | ast.AnnAssign) -> list[ast.expr]:
    return node.targets if isinstance(node, ast.Assign) else [node.target]


def _is_literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return False
    return True
