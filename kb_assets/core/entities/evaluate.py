"""What a dotted expression written in a module stands for, one step past the symbol table.

The symbol table answers what a *name* means; model code also needs what a first-party
*assignment* holds: ``Base = declarative_base()``, ``db = SQLAlchemy()`` then ``db.Model`` and
``db.Column``, ``mapper_registry = registry()`` then ``@mapper_registry.mapped``, ``Model = Base``.
``Evaluator.dotted`` follows names through the table, then assignments' values (a name: its
meaning; a call of an outside callable: that callable's name plus ``()``), then attributes. The
answer is a ``Value``: a first-party class, module or function (``symbol``), or an outside
expression (``external``, e.g. ``flask_sqlalchemy.SQLAlchemy().Model``; the result of calling a
first-party function or class is written the same way, with its dotted path) together with the
first-party assignment that produced it (``origin``, to ground on and to read its call's
arguments). Anything else (an assignment of something opaque) is a ``Value`` whose symbol is the
assignment itself. Cycle-safe and memoized per ``(module, dotted)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kb_assets.core.models import JSON
from kb_assets.core.symbols.model import Symbol
from kb_assets.core.symbols.table import SymbolTable

_MAX_DEPTH = 16
"""Assignment hops followed before giving up (a longer chain is treated as unknown)."""


@dataclass(frozen=True, slots=True)
class Value:
    """What an expression evaluates to (see the module docstring)."""

    symbol: Symbol | None = None
    external: str | None = None
    origin: Symbol | None = field(default=None, compare=False)

    @property
    def first_party_class(self) -> Symbol | None:
        """The first-party class it is, if it is one."""
        s = self.symbol
        return s if s is not None and s.kind == "class" and not s.is_external else None

    @property
    def name(self) -> str | None:
        """The outside name, else the dotted path of a first-party class or function."""
        s = self.symbol
        if self.external is not None or s is None or s.kind not in ("class", "function"):
            return self.external
        return s.dotted

    @property
    def call(self) -> Mapping[str, JSON] | None:
        """The call summary of the assignment that produced an outside value (``declarative_base(cls=X)``)."""
        value = (self.origin.facts or {}).get("value") if self.origin is not None else None
        return value if isinstance(value, Mapping) and value.get("kind") == "call" else None


class Evaluator:
    """Evaluates dotted expressions over one symbol table (memoized)."""

    def __init__(self, table: SymbolTable) -> None:
        self.table = table
        self._memo: dict[tuple[str, str], Value | None] = {}
        self._active: set[tuple[str, str]] = set()

    def dotted(self, module: str, dotted: str) -> Value | None:
        """The value of ``dotted`` written at the top level of ``module`` (None: unknown)."""
        key = (module, dotted)
        if key in self._memo:
            return self._memo[key]
        if key in self._active or len(self._active) > _MAX_DEPTH:
            return None
        self._active.add(key)
        try:
            first, *rest = dotted.split(".")
            value = self._of(self.table.lookup(module, first))
            for part in rest:
                if value is None:
                    break
                value = self._member(value, part)
        finally:
            self._active.discard(key)
        self._memo[key] = value
        return value

    def called(self, module: str, callee: str | None) -> Value | None:
        """The value of a call of ``callee``: the callable's name plus ``()`` (an outside name, or
        the dotted path of a first-party function or class, e.g. when the repository is the
        framework itself)."""
        target = self.dotted(module, callee) if callee else None
        name = target.name if target is not None else None
        if target is None or name is None:
            return None
        return Value(external=f"{name}()", origin=target.origin)

    def _of(self, symbol: Symbol | None) -> Value | None:
        if symbol is None:
            return None
        if symbol.is_external:
            return Value(external=symbol.external)
        value = (symbol.facts or {}).get("value") if symbol.kind == "attribute" else None
        if not isinstance(value, Mapping) or symbol.module is None:
            return Value(symbol=symbol)
        return self._assigned(symbol, symbol.module, value) or Value(symbol=symbol)

    def _assigned(self, symbol: Symbol, module: str, value: Mapping[str, JSON]) -> Value | None:
        """What a first-party assignment holds: a name's value, or a call's result."""
        if value.get("kind") == "name":
            return self.dotted(module, str(value["dotted"]))
        called = self.called(module, value.get("callee")) if value.get("kind") == "call" else None
        return Value(external=called.external, origin=symbol) if called is not None else None

    def _member(self, value: Value, name: str) -> Value | None:
        if value.external is not None:
            return Value(external=f"{value.external}.{name}", origin=value.origin)
        symbol = value.symbol
        if symbol is None or symbol.kind not in ("module", "class"):
            return None
        return self._of(self.table.member(symbol, name))
