"""Static values of routing arguments: path strings, tags, status codes, response models, classes.

Each evaluation follows names through ``Names`` and returns the value with the grounding of
every first-party constant it read (role ``constant``), or None when the value cannot be known
statically (the caller records a gap). Conventions shared with the runtime side
(``kb_resources.introspect_child``):

* a response model is the dotted path of a class (first-party, external such as
  ``pydantic.BaseModel``, or ``builtins.dict``); containers are unwrapped to their item model with
  a ``shape``: ``list`` (list, set, tuple, sequences), ``dict`` (the value type), ``generic``
  (any other subscripted class: the class itself is the model), ``union`` (no single model);
  ``Optional[X]``/``X | None`` is X with X's shape, ``Annotated[X, ...]`` is X;
* inferred from a return annotation, a ``Response`` class and a stream (``Iterator``,
  ``AsyncIterator``, generators) mean no response model, as FastAPI decides.
"""

from __future__ import annotations

import http
import re
from collections.abc import Callable
from dataclasses import dataclass

from kb_assets.core.extractors.route_names import Names, Value
from kb_assets.core.extractors.route_scope import Place
from kb_assets.core.models import JSON, Grounding
from kb_assets.core.symbols.model import Symbol

APP_CLASSES = frozenset({"fastapi.FastAPI", "fastapi.applications.FastAPI"})
ROUTER_CLASSES = frozenset({"fastapi.APIRouter", "fastapi.routing.APIRouter"})
_RESPONSE_PREFIXES = ("fastapi.responses.", "starlette.responses.", "fastapi.Response", "sse_starlette.")
_BUILTINS = frozenset(
    {"dict", "list", "set", "frozenset", "tuple", "str", "int", "float", "bool", "bytes", "object"}
)
_LIST = frozenset(
    {
        "list",
        "set",
        "frozenset",
        "tuple",
        "List",
        "Set",
        "FrozenSet",
        "Tuple",
        "Sequence",
        "MutableSequence",
        "Iterable",
        "Collection",
        "AbstractSet",
        "Deque",
        "deque",
    }
)
_DICT = frozenset({"dict", "Dict", "Mapping", "MutableMapping", "OrderedDict", "DefaultDict", "defaultdict"})
_STREAMS = frozenset({"Iterator", "AsyncIterator", "Generator", "AsyncGenerator", "AsyncIterable"})
_TYPING = ("typing.", "typing_extensions.", "collections.abc.", "collections.", "builtins.")
_STATUS_NAME = re.compile(r"HTTP_(\d{3})(?:_|$)")
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")


_NO_GROUNDING: tuple[Grounding, ...] = ()
_ClassTest = Callable[[Symbol, frozenset[str]], str | None]


@dataclass(frozen=True, slots=True)
class Model:
    """A response model as the payload records it."""

    dotted: str | None = None
    shape: str | None = None
    grounding: tuple[Grounding, ...] = ()
    unresolved: str | None = None


class Values:
    """Evaluates routing arguments statically."""

    def __init__(self, names: Names) -> None:
        self.names = names

    def string(self, v: JSON, place: Place, depth: int = 0) -> tuple[str | None, tuple[Grounding, ...]]:
        """A string value (literals, f-strings, ``+``, constants), with the constants' grounding."""
        kind = v.get("kind") if isinstance(v, dict) and depth < 10 else None
        if kind == "literal":
            value = v["value"]
            return (value if isinstance(value, str) else None), ()
        if kind in ("fstring", "concat"):
            text, grounding = "", _NO_GROUNDING
            for part in v["parts" if kind == "fstring" else "items"]:
                piece, more = self.string(part, place, depth + 1)
                if piece is None and kind == "fstring":
                    piece = _int_text(part)
                if piece is None:
                    return None, ()
                text, grounding = text + piece, grounding + more
            return text, grounding
        if kind == "name":
            found = {self._constant(t, depth) for t in self.names.resolve(v["dotted"], place)}
            return next(iter(found)) if len(found) == 1 else (None, ())
        return None, ()

    def strings(self, v: JSON, place: Place) -> tuple[list[str] | None, tuple[Grounding, ...]]:
        """A list of strings (tags, methods); None when any item is unknown."""
        if not isinstance(v, dict):
            return None, ()
        if v.get("kind") == "literal" and isinstance(v["value"], list):
            items = v["value"]
            return (items, ()) if all(isinstance(i, str) for i in items) else (None, ())
        if v.get("kind") == "list":
            return self._joined([_one(self.string(item, place)) for item in v["items"]])
        if v.get("kind") == "concat":
            return self._joined([self.strings(item, place) for item in v["items"]])
        targets = self.names.resolve(v["dotted"], place) if v.get("kind") == "name" else []
        if len(targets) == 1 and isinstance(targets[0], Value):
            return self.strings(targets[0].value, targets[0].place)
        return None, ()

    def status(self, v: JSON, place: Place) -> tuple[int | None, tuple[Grounding, ...]]:
        """An HTTP status code: a literal, a ``status.HTTP_201_CREATED`` or ``HTTPStatus.X`` constant."""
        kind = v.get("kind") if isinstance(v, dict) else None
        if kind == "literal":
            value = v["value"]
            return (value if isinstance(value, int) and not isinstance(value, bool) else None), ()
        if kind != "name":
            return None, ()
        written = _STATUS_NAME.search(v["dotted"].rpartition(".")[2])
        for target in self.names.resolve(v["dotted"], place):
            if isinstance(target, Value):
                code, grounding = self.status(target.value, target.place)
                return code, grounding + _constant_ground(target)
            name = target.target or ""
            match = _STATUS_NAME.search(name.rpartition(".")[2])
            if match:
                return int(match.group(1)), ()
            head, _, member = name.rpartition(".")
            if head.endswith("HTTPStatus") and member in http.HTTPStatus.__members__:
                return int(http.HTTPStatus[member].value), ()
        # ``status.HTTP_204_NO_CONTENT`` through a wrapper: the name says the code (Starlette's names)
        return (int(written.group(1)), ()) if written else (None, ())

    def model(self, v: JSON, place: Place, *, inferred: bool, depth: int = 0) -> Model:
        """The response model named by ``v`` (see the module docstring for the conventions)."""
        kind = v.get("kind") if isinstance(v, dict) and depth < 8 else None
        if kind == "literal":
            value = v["value"]
            if isinstance(value, str) and _DOTTED.fullmatch(value.strip()):
                return self.model(
                    {"kind": "name", "dotted": value.strip()}, place, inferred=inferred, depth=depth + 1
                )
            return Model() if value is None else Model(unresolved=str(value))
        if kind == "name":
            return self._named_model(v["dotted"], place, inferred, depth)
        if kind == "subscript":
            return self._subscript_model(v, place, inferred, depth)
        if kind == "union":
            return self._union_model(v["items"], place, inferred, depth)
        return Model(unresolved="expression")

    def class_kind(self, symbol: Symbol, seen: frozenset[str] = frozenset()) -> str | None:
        """``app`` for FastAPI (or a subclass), ``router`` for APIRouter (or a subclass), else None."""
        name = symbol.target or ""
        if name in APP_CLASSES:
            return "app"
        if name in ROUTER_CLASSES:
            return "router"
        return self._inherited(symbol, seen, self.class_kind)

    def is_response(self, symbol: Symbol, seen: frozenset[str] = frozenset()) -> str | None:
        """``response`` when the class is a Starlette/FastAPI ``Response`` (or a subclass)."""
        if (symbol.target or "").startswith(_RESPONSE_PREFIXES):
            return "response"
        return self._inherited(symbol, seen, self.is_response)

    # -- steps -----------------------------------------------------------------------------
    @staticmethod
    def _joined(
        parts: list[tuple[list[str] | None, tuple[Grounding, ...]]],
    ) -> tuple[list[str] | None, tuple[Grounding, ...]]:
        """``a + b`` of string lists (None when any part is unknown)."""
        if any(items is None for items, _ in parts):
            return None, ()
        return [i for items, _ in parts for i in items or []], tuple(g for _, more in parts for g in more)

    def _inherited(self, symbol: Symbol, seen: frozenset[str], test: _ClassTest) -> str | None:
        """The first answer of ``test`` over a first-party class's bases (depth first)."""
        if symbol.kind != "class" or symbol.is_external or symbol.dotted in seen or symbol.module is None:
            return None
        for base in (symbol.facts or {}).get("bases", []):
            dotted = base.get("dotted") if base.get("kind") in ("name", "subscript") else None
            resolved = self.names.table.resolve(symbol.module, dotted) if dotted else None
            answer = test(resolved, seen | {symbol.dotted or ""}) if resolved is not None else None
            if answer is not None:
                return answer
        return None

    def _constant(self, target: object, depth: int) -> tuple[str | None, tuple[Grounding, ...]]:
        if not isinstance(target, Value):
            return None, ()
        text, grounding = self.string(target.value, target.place, depth + 1)
        return (text, grounding + _constant_ground(target)) if text is not None else (None, ())

    def _named_model(self, dotted: str, place: Place, inferred: bool, depth: int) -> Model:
        targets = self.names.resolve(dotted, place)
        if not targets:
            return Model(f"builtins.{dotted}") if dotted in _BUILTINS else Model(unresolved=dotted)
        target = targets[0]
        if isinstance(target, Value):  # an alias: ``Items = list[Item]``
            return self.model(target.value, target.place, inferred=inferred, depth=depth + 1)
        if inferred and (self.is_response(target) is not None):
            return Model()
        if target.is_external:
            return Model(target.external)
        grounding: tuple[Grounding, ...] = ()
        if target.kind == "class" and target.path is not None and target.span is not None:
            grounding = (self.names.index.program.files[target.path].ground(target.span, "response_model"),)
        return Model(target.dotted, grounding=grounding)

    def _head(self, dotted: str | None, place: Place) -> str:
        """The bare name of a subscripted type's head when it is a typing/builtin container."""
        if not dotted:
            return ""
        targets = self.names.resolve(dotted, place)
        if not targets:
            return dotted if dotted in _BUILTINS or "." not in dotted else ""
        target = targets[0]
        name = target.target if isinstance(target, Symbol) else None
        return name.rpartition(".")[2] if name and name.startswith(_TYPING) else ""

    def _subscript_model(self, v: JSON, place: Place, inferred: bool, depth: int) -> Model:
        head, index = self._head(v.get("dotted"), place), v.get("index", [])
        if not index:
            return Model(unresolved="subscript")
        if head in ("Optional", "Annotated"):
            return self.model(index[0], place, inferred=inferred, depth=depth + 1)
        if head == "Union":
            return self._union_model(index, place, inferred, depth)
        if head in _STREAMS and inferred:
            return Model()
        if head in _LIST or head in _DICT:
            inner = self.model(
                index[-1] if head in _DICT else index[0], place, inferred=False, depth=depth + 1
            )
            return Model(inner.dotted, "dict" if head in _DICT else "list", inner.grounding, inner.unresolved)
        outer = self.model(
            {"kind": "name", "dotted": v.get("dotted") or ""}, place, inferred=inferred, depth=depth + 1
        )
        return Model(outer.dotted, "generic", outer.grounding, outer.unresolved) if outer.dotted else outer

    def _union_model(self, items: list[JSON], place: Place, inferred: bool, depth: int) -> Model:
        kept = [i for i in items if not (i.get("kind") == "literal" and i.get("value") is None)]
        if len(kept) == 1:
            return self.model(kept[0], place, inferred=inferred, depth=depth + 1)
        return Model(shape="union")


def _one(found: tuple[str | None, tuple[Grounding, ...]]) -> tuple[list[str] | None, tuple[Grounding, ...]]:
    """A single string as a one-item list (None stays None)."""
    text, grounding = found
    return ([text], grounding) if text is not None else (None, ())


def _constant_ground(target: Value) -> tuple[Grounding, ...]:
    """A first-party constant read at module or class level grounds the value (role ``constant``)."""
    if target.key is None or target.span is None or target.key[1]:
        return ()
    return (target.place.ground("constant", target.span),)


def _int_text(part: JSON) -> str | None:
    """An integer literal inside an f-string, as text."""
    if isinstance(part, dict) and part.get("kind") == "literal" and isinstance(part.get("value"), int):
        return str(part["value"])
    return None
