"""The program ``kb introspect`` runs in its sandbox: import an app, list what FastAPI serves.

Run as ``python -I -B introspect_child.py`` with a JSON request on stdin: ``target`` is
``MODULE:APP``, or ``MODULE:factory()`` to call an app factory without arguments; ``roots`` go
first on ``sys.path``; ``allowed`` is the only directory it may write to. It uses the standard
library only until it imports the app, so any interpreter with FastAPI works.
Before importing anything of the app it installs an audit hook (``sys.addaudithook``; it cannot be
removed) that refuses network access (connect, name lookups, bind, send), process creation and any
write outside ``allowed``; the parent adds a network namespace when it can.

It prints one JSON object: ``{"routes": [...], "openapi_error": str | null}``. Routes come from
the app's route table (what FastAPI matches, mounted FastAPI sub-apps included under their mount
path), enriched with each operation's ``operationId``, response schema and status codes from
``app.openapi()``. Exit status 3: the target is not there or not a FastAPI app; 4: importing the
module failed (the message says why).
"""

from __future__ import annotations

import json
import os
import sys
import typing
from collections.abc import Callable
from typing import Any

_NETWORK = frozenset(
    {
        "socket.connect",
        "socket.getaddrinfo",
        "socket.gethostbyname",
        "socket.gethostbyaddr",
        "socket.bind",
        "socket.sendto",
        "socket.sendmsg",
        "socket.getnameinfo",
    }
)
_SPAWN = frozenset(
    {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "pty.spawn"}
)
_PATH_EVENTS = frozenset(
    {
        "os.remove",
        "os.rename",
        "os.replace",
        "os.mkdir",
        "os.rmdir",
        "os.symlink",
        "os.link",
        "os.chmod",
        "os.chown",
        "os.truncate",
        "os.utime",
        "shutil.rmtree",
        "shutil.move",
        "shutil.copyfile",
        "sqlite3.connect",
    }
)
BAD_TARGET, IMPORT_FAILED = 3, 4
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


class SandboxViolationError(PermissionError):
    """Something the sandbox does not allow (network, processes, writes outside the temp dir)."""


def install_guard(allowed: str) -> None:
    """Refuse network access, new processes and writes outside ``allowed`` from now on."""
    root = os.path.realpath(allowed)

    def inside(path: object) -> bool:
        if isinstance(path, int) or path is None:
            return True
        if isinstance(path, bytes | str | os.PathLike):
            real = os.path.realpath(os.fsdecode(path))
            return real == root or real.startswith(root + os.sep) or real in (os.devnull, ":memory:")
        return True

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event in _NETWORK:
            raise SandboxViolationError(f"network access is blocked in the introspection sandbox ({event})")
        if event in _SPAWN:
            raise SandboxViolationError(
                f"starting processes is blocked in the introspection sandbox ({event})"
            )
        if event == "open" and len(args) >= 3:
            mode, flags = args[1] or "", args[2] or 0
            writing = any(c in str(mode) for c in "wax+") or bool(int(flags) & _WRITE_FLAGS)
            if writing and not inside(args[0]):
                raise SandboxViolationError(
                    f"writing {args[0]!r} is blocked: only the sandbox's temp dir is writable"
                )
        elif event in _PATH_EVENTS:
            for arg in args[:2]:
                if isinstance(arg, str | bytes | os.PathLike) and not inside(arg):
                    raise SandboxViolationError(
                        f"{event} on {arg!r} is blocked outside the sandbox's temp dir"
                    )

    sys.addaudithook(hook)


def model_of(tp: Any) -> tuple[str | None, str | None]:  # noqa: PLR0911 - one return per type form
    """(dotted model, shape) with the conventions of ``kb_assets.core.extractors.route_values``."""
    if tp is None or tp is type(None):
        return None, None
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Annotated:
        return model_of(args[0])
    if origin is typing.Union or type(tp).__name__ == "UnionType":
        kept = [a for a in args if a is not type(None)]
        return model_of(kept[0]) if len(kept) == 1 else (None, "union")
    name = getattr(origin, "__name__", "") if origin is not None else ""
    if name in _LIST_ORIGINS:
        return (model_of(args[0])[0] if args else None), "list"
    if name in _DICT_ORIGINS:
        return (model_of(args[-1])[0] if args else None), "dict"
    if origin is not None:
        return _dotted(origin), "generic"
    meta = getattr(tp, "__pydantic_generic_metadata__", None)
    if isinstance(meta, dict) and meta.get("origin") is not None:
        return _dotted(meta["origin"]), "generic"
    return _dotted(tp), None


_LIST_ORIGINS = frozenset(
    {
        "list",
        "set",
        "frozenset",
        "tuple",
        "Sequence",
        "MutableSequence",
        "Iterable",
        "Collection",
        "Set",
        "AbstractSet",
        "deque",
    }
)
_DICT_ORIGINS = frozenset({"dict", "Mapping", "MutableMapping", "OrderedDict", "defaultdict"})


def _dotted(obj: Any) -> str:
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    return f"{module}.{qualname}" if module and qualname else repr(obj)


def handler_of(endpoint: Any) -> str | None:
    """``module.qualname`` of an endpoint, nested functions as ``outer.inner`` (as knowbase writes them)."""
    if endpoint is None:
        return None
    target = (
        endpoint.func if hasattr(endpoint, "func") and not hasattr(endpoint, "__qualname__") else endpoint
    )
    return _dotted(target).replace("<locals>.", "")


def _route_contexts(app: Any) -> list[Any]:
    """The app's effective routes (FastAPI >= 0.120 keeps included routers lazily)."""
    routing = sys.modules.get("fastapi.routing")
    flatten: Callable[[Any], Any] | None = getattr(routing, "iter_route_contexts", None)
    return list(flatten(app.routes)) if flatten is not None else list(app.routes)


def list_routes(app: Any, prefix: str = "", mounted_at: str | None = None) -> list[dict[str, Any]]:
    """Every route the app serves, mounted FastAPI sub-apps included."""
    from fastapi import FastAPI
    from fastapi.routing import APIRoute, APIWebSocketRoute
    from starlette.routing import Mount

    out: list[dict[str, Any]] = []
    for ctx in _route_contexts(app):
        original = getattr(ctx, "original_route", ctx)
        if isinstance(original, Mount):
            if isinstance(original.app, FastAPI):
                at = prefix + ctx.path
                out.extend(list_routes(original.app, at, at))
            continue
        if isinstance(original, APIRoute):
            model, shape = model_of(ctx.response_model)
            for method in sorted(ctx.methods):
                out.append(_record(ctx, method, prefix, mounted_at=mounted_at, model=model, shape=shape))
        elif isinstance(original, APIWebSocketRoute):
            out.append(_record(ctx, "WEBSOCKET", prefix, mounted_at=mounted_at, model=None, shape=None))
    return out


def _record(
    ctx: Any, method: str, prefix: str, *, mounted_at: str | None, model: str | None, shape: str | None
) -> dict[str, Any]:
    return {
        "method": method,
        "path": prefix + ctx.path,
        "handler": handler_of(getattr(ctx, "endpoint", None)),
        "name": getattr(ctx, "name", None),
        "response_model": model,
        "response_model_shape": shape,
        "status_code": getattr(ctx, "status_code", None),
        "tags": [str(getattr(t, "value", t)) for t in getattr(ctx, "tags", [])],
        "include_in_schema": bool(getattr(ctx, "include_in_schema", True)),
        "mounted_at": mounted_at,
    }


def add_openapi(app: Any, routes: list[dict[str, Any]]) -> str | None:
    """Add ``operation_id``, ``response_schema`` and ``status_codes`` from ``app.openapi()``."""
    docs: dict[str, Any] = {}
    error = None
    for at, sub in _apps(app, ""):
        try:
            for path, item in sub.openapi().get("paths", {}).items():
                docs[at + path] = item
        except Exception as exc:  # an app whose schema fails still has routes
            error = f"{type(exc).__name__}: {exc}"[:300]
    for route in routes:
        operation = docs.get(route["path"], {}).get(route["method"].lower())
        if not isinstance(operation, dict):
            continue
        responses = operation.get("responses", {})
        route["operation_id"] = operation.get("operationId")
        route["status_codes"] = sorted(str(code) for code in responses)
        route["response_schema"] = _schema_ref(responses)
    return error


def _apps(app: Any, at: str) -> list[tuple[str, Any]]:
    from fastapi import FastAPI
    from starlette.routing import Mount

    found = [(at, app)]
    for ctx in _route_contexts(app):
        original = getattr(ctx, "original_route", ctx)
        if isinstance(original, Mount) and isinstance(original.app, FastAPI):
            found.extend(_apps(original.app, at + ctx.path))
    return found


def _schema_ref(responses: dict[str, Any]) -> str | None:
    for code in sorted(responses):
        if code.startswith("2"):
            schema = responses[code].get("content", {}).get("application/json", {}).get("schema", {})
            options = [schema, schema.get("items", {}), *schema.get("anyOf", [])]
            ref = next((o["$ref"] for o in options if isinstance(o, dict) and "$ref" in o), None)
            return str(ref) if ref else None
    return None


class _RefusedError(Exception):
    """The target cannot be loaded; ``code`` is the exit status."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def load_app(target: str, roots: list[str]) -> Any:
    """Import ``MODULE`` from the repository and return ``APP`` (calling it for ``factory()``)."""
    module_name, _, attr = target.partition(":")
    try:
        module = __import__(module_name, fromlist=["_"])
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise _RefusedError(BAD_TARGET, f"no module {module_name!r} in the repository") from None
        raise _RefusedError(
            IMPORT_FAILED, f"importing {module_name} failed: ModuleNotFoundError: {exc}"
        ) from None
    except BaseException as exc:  # any failure of the app's import is reported
        raise _RefusedError(
            IMPORT_FAILED, f"importing {module_name} failed: {type(exc).__name__}: {exc}"
        ) from None
    origin = os.path.realpath(getattr(module, "__file__", None) or "")
    if not any(origin.startswith(os.path.realpath(root) + os.sep) for root in roots):
        raise _RefusedError(
            BAD_TARGET, f"{module_name} is not a module of the repository ({origin or 'no file'})"
        )
    app = getattr(module, attr.removesuffix("()"), None)
    if attr.endswith("()") and callable(app):
        try:
            app = app()
        except BaseException as exc:  # any failure of the factory is reported
            raise _RefusedError(IMPORT_FAILED, f"{target} failed: {type(exc).__name__}: {exc}") from None
    if app is None or not hasattr(app, "openapi") or not hasattr(app, "routes"):
        raise _RefusedError(BAD_TARGET, f"{module_name} has no FastAPI app named {attr!r}")
    return app


def main() -> int:
    """Read the request, guard the process, load the app and print its routes."""
    request = json.loads(sys.stdin.read())
    install_guard(request["allowed"])
    sys.path[:0] = request["roots"]
    try:
        app = load_app(request["target"], request["roots"])
    except _RefusedError as refused:
        print(str(refused)[:500], file=sys.stderr)
        return refused.code
    routes = list_routes(app)
    error = add_openapi(app, routes)
    print(json.dumps({"routes": routes, "openapi_error": error}, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
