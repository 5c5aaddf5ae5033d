"""The framework side of ``eval_entities``: import model modules and ask each framework what it sees.

Runs in the interpreter that has the project's dependencies (it imports nothing of knowbase).
Reads a plan ``{"repo": DIR, "roots": {ROOT: [module, ...]}}``, imports each root's modules with
that root first on ``sys.path`` (purging the root's own modules afterwards, so equal module names
under different roots do not collide), walks every class defined in each module (nested ones
too) and writes ``{"classes": {dotted: {...}}, "failed": {module: error}}``.

Usage: ``PY bench/entities_probe.py PLAN.json OUT.json``
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import signal
import sys
import typing
from pathlib import Path
from types import ModuleType
from typing import Any

TIMEOUT_S = 30
FRAMEWORKS = frozenset(
    {"pydantic", "pydantic_settings", "sqlalchemy", "attr", "attrs", "sqlmodel", "typing_extensions"}
)


def optional(name: str) -> Any:
    """A framework module if it is installed, else None."""
    try:
        return __import__(name, fromlist=["_"])
    except Exception:
        return None


pydantic = optional("pydantic")
pydantic_v1 = optional("pydantic.v1")
sqlalchemy = optional("sqlalchemy")
sa_orm = optional("sqlalchemy.orm")
attrs = optional("attr")
sqlmodel = optional("sqlmodel")
optional("sqlmodel.main")


def mapper_of(cls: type) -> Any:
    """The SQLAlchemy mapper whose class is ``cls``, if any."""
    if sqlalchemy is None or ("__mapper__" not in vars(cls) and not hasattr(cls, "__mapper__")):
        return None
    mapper = sqlalchemy.inspect(cls, raiseerr=False)
    return mapper if mapper is not None and getattr(mapper, "class_", None) is cls else None


def mapped_fields(mapper: Any) -> tuple[list[str], list[str]]:
    """Mapper attribute keys (configured when possible) and its plain table-column keys, in order."""
    try:
        props = list(mapper.attrs)
    except Exception:
        props = list(mapper._props.values())
    columns = [
        p.key
        for p in props
        if isinstance(p, sa_orm.ColumnProperty)
        and len(p.columns) >= 1
        and isinstance(p.columns[0], sqlalchemy.Column)
    ]
    return [p.key for p in props], columns


ROOTS = frozenset({"BaseModel", "GenericModel", "BaseSettings", "RootModel", "SQLModel"})


def describe(cls: type) -> dict[str, Any] | None:
    """What the frameworks say ``cls`` is, with the classes its fields name (``refs``)."""
    found = _describe(cls)
    if found is not None:
        found["refs"] = sorted(references(cls, found["fields"]))
    return found


def _describe(cls: type) -> dict[str, Any] | None:
    """What the frameworks say ``cls`` is (None: not a model; the frameworks' own bases are not)."""
    if (
        cls.__module__.split(".", 1)[0] in ("pydantic", "pydantic_settings", "sqlmodel")
        and cls.__name__ in ROOTS
    ):
        return None
    if sqlmodel is not None and issubclass(cls, sqlmodel.SQLModel):
        return mapped("sqlmodel", cls) or model("sqlmodel", cls)
    return mapped("sqlalchemy", cls) or model("pydantic", cls) or decorated(cls)


def mapped(framework: str, cls: type) -> dict[str, Any] | None:
    """A mapped class: the mapper's attributes."""
    mapper = mapper_of(cls)
    if mapper is None:
        return None
    fields, columns = mapped_fields(mapper)
    return {"framework": framework, "fields": fields, "columns": columns}


def model(framework: str, cls: type) -> dict[str, Any] | None:
    """A pydantic model (v2, or v1 natively or through ``pydantic.v1``): its fields."""
    bases = [m.BaseModel for m in (pydantic, pydantic_v1) if m is not None]
    if not any(issubclass(cls, b) for b in bases):
        return None
    fields = cls.model_fields if hasattr(cls, "model_fields") else cls.__fields__  # type: ignore[attr-defined]
    return {"framework": framework, "fields": list(fields)}


def decorated(cls: type) -> dict[str, Any] | None:
    """A dataclass (stdlib or pydantic) or an attrs class declared by this very class."""
    own = vars(cls)
    if "__dataclass_fields__" in own:
        pyd = any(k in own for k in ("__pydantic_fields__", "__pydantic_model__", "__pydantic_validator__"))
        names = [f.name for f in dataclasses.fields(cls)]
        return {"framework": "pydantic" if pyd else "dataclass", "fields": names}
    if attrs is not None and "__attrs_attrs__" in own:
        return {"framework": "attrs", "fields": [a.name for a in attrs.fields(cls)]}
    return None


def references(cls: type, fields: list[str]) -> set[str]:
    """Dotted names of the classes named in the fields' resolved types and of every mapper
    relationship's target (all classes: the comparison keeps the entities)."""
    found: set[str] = set()
    mapper = mapper_of(cls)
    if mapper is not None:
        with contextlib.suppress(Exception):
            found |= {dotted(r.mapper.class_) for r in mapper.relationships}
    for annotation in field_types(cls, fields):
        walk(annotation, found, 0)
    return found


def field_types(cls: type, fields: list[str]) -> list[Any]:
    """The resolved type of each field, as the framework holds it (unresolvable ones left out)."""
    with contextlib.suppress(Exception):
        cls.model_rebuild()  # type: ignore[attr-defined]  # resolve forward references defined later
    for attribute in ("model_fields", "__pydantic_fields__"):
        holder = getattr(cls, attribute, None)
        if isinstance(holder, dict) and holder:
            return [holder[f].annotation for f in fields if f in holder]
    v1 = getattr(cls, "__fields__", None)
    if isinstance(v1, dict) and v1 and hasattr(next(iter(v1.values())), "outer_type_"):
        return [v1[f].outer_type_ for f in fields if f in v1]
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # one unresolvable forward reference: resolve the others one by one
        hints = {}
        for c in reversed(cls.__mro__):
            namespace = vars(sys.modules.get(c.__module__, typing))
            for name, value in vars(c).get("__annotations__", {}).items():
                hints[name] = resolved(value, namespace)
    return [hints[f] for f in fields if f in hints and not isinstance(hints[f], str)]


def resolved(annotation: Any, namespace: dict[str, Any]) -> Any:
    """A string annotation evaluated in its module (left a string when that fails)."""
    if not isinstance(annotation, str):
        return annotation
    try:
        return eval(annotation, dict(namespace))  # the repository's own annotation text
    except Exception:
        return annotation


def walk(annotation: Any, found: set[str], depth: int) -> None:
    """Classes in a type: through generic aliases and unions, not inside ``Literal``."""
    if depth > 8:
        return
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return
    generic = getattr(annotation, "__pydantic_generic_metadata__", None)
    if isinstance(annotation, type) and isinstance(generic, dict) and generic.get("origin") is not None:
        found.add(dotted(generic["origin"]))  # ``Range[int]``: pydantic's parametrized subclass
        for arg in generic.get("args") or ():
            walk(arg, found, depth + 1)
    elif isinstance(annotation, type) and typing.get_origin(annotation) is None:
        found.add(dotted(annotation))
    elif origin is not None:
        if isinstance(origin, type):
            found.add(dotted(origin))
        for arg in typing.get_args(annotation):
            walk(arg, found, depth + 1)


def dotted(cls: type) -> str:
    """A class's module and qualified name."""
    return f"{cls.__module__}.{cls.__qualname__}"


def is_class(value: object) -> bool:
    """``isinstance(value, type)``, safe for lazy proxies that load on attribute access."""
    try:
        return isinstance(value, type)
    except Exception:  # a proxy that fails to load is not a class
        return False


def classes(module: ModuleType) -> list[type]:
    """Classes defined in ``module`` at module level or nested in its classes, by qualified name."""
    found: list[type] = []
    todo = [v for v in vars(module).values() if is_class(v)]
    while todo:
        cls = todo.pop()
        if (
            cls.__module__ != module.__name__
            or "<" in cls.__qualname__
            or "[" in cls.__qualname__
            or cls in found
        ):
            continue
        found.append(cls)
        todo.extend(v for v in vars(cls).values() if is_class(v))
    return found


def _alarm(signum: int, frame: Any) -> None:
    raise TimeoutError(f"import took more than {TIMEOUT_S}s")


def describe_module(module: ModuleType, out: dict[str, Any]) -> None:
    """Describe the classes of one freshly imported module, then forget SQLModel's shared tables
    (every SQLModel tutorial defines its own ``hero`` table in the one default registry)."""
    if sa_orm is not None:
        with contextlib.suppress(Exception):
            sa_orm.configure_mappers()
    for cls in classes(module):
        try:
            described = describe(cls)
        except Exception as exc:
            out["failed"][f"{module.__name__}:{cls.__qualname__}"] = f"{type(exc).__name__}: {exc}"[:200]
            continue
        if described is not None:
            out["classes"][f"{module.__name__}.{cls.__qualname__}"] = described | {"module": module.__name__}
    if sqlmodel is not None:
        sqlmodel.SQLModel.metadata.clear()
        sqlmodel.main.default_registry.dispose()


def probe_root(repo: Path, root: str, modules: list[str], out: dict[str, Any]) -> None:
    """Import one root's modules and describe their classes."""
    sys.path.insert(0, str(repo / root))
    forget(modules)  # a copy imported earlier (by another root's code) would shadow this root's
    for name in modules:
        signal.alarm(TIMEOUT_S)
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                module = __import__(name, fromlist=["_"])
            if not str(getattr(module, "__file__", "") or "").startswith(str(repo / root)):
                raise ImportError(f"shadowed by {getattr(module, '__file__', None)}")  # an installed copy
            out["imported"].append(name)
        except BaseException as exc:
            out["failed"][name] = f"{type(exc).__name__}: {str(exc)[:160]}"
            continue
        finally:
            signal.alarm(0)
        describe_module(module, out)
    sys.path.remove(str(repo / root))
    forget(modules)


def forget(modules: list[str]) -> None:
    """Drop the loaded modules of these modules' top-level packages (except the frameworks the
    probe asks, whose own sources therefore count as shadowed)."""
    tops = {m.split(".", 1)[0] for m in modules} - FRAMEWORKS
    for name in [m for m in sys.modules if m.split(".", 1)[0] in tops]:
        del sys.modules[name]


def main() -> None:
    """Read the plan, probe every root, write the result."""
    plan = json.loads(Path(sys.argv[1]).read_text())
    signal.signal(signal.SIGALRM, _alarm)
    out: dict[str, Any] = {"classes": {}, "failed": {}, "imported": []}
    for root, modules in sorted(plan["roots"].items()):
        probe_root(Path(plan["repo"]), root, modules, out)
    Path(sys.argv[2]).write_text(json.dumps(out, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
