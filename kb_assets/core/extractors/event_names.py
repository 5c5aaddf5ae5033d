"""What a name written at one registration means: Python's lookup, on facts and the symbol table.

Order, as Python looks a name up where the registration is written:

1. the enclosing functions' own names, innermost first (recorded by ``event_facts``): a nested def
   or class is its own span; ``app = FastAPI()`` is the variable ``module.function.app`` on the
   function's span, carrying the callee, so a factory's local app is recognized; a local import
   resolves like a module-level one; a parameter or any other local resolves to nothing;
2. code that runs at import time (module and class bodies: ``Where.line`` is set) sees a module
   name as bound *at that line*: when the module binds the name more than once, the last binding
   before the line is used (``@event.listens_for(Session, ...)`` above ``Session =
   sessionmaker()`` means ``sqlalchemy.orm.Session``);
3. otherwise the module's final namespace, through the shared symbol table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kb_assets.core.models import JSON, SpanKind
from kb_assets.core.program import SourceFile
from kb_assets.core.symbols.facts import Binding, absolute_module
from kb_assets.core.symbols.model import Symbol, SymbolKind, external_symbol
from kb_assets.core.symbols.table import SymbolTable


@dataclass(frozen=True, slots=True)
class Where:
    """Where a registration is written: the def/class body holding it (``""``: the module), and
    its line when that code runs at import time (None inside a function body)."""

    scope: str
    line: int | None = None


def call_where(call: Mapping[str, JSON]) -> Where:
    """Where an ``event_facts`` call record is written."""
    return Where(str(call["scope"]), None if call.get("in_function") else int(call["line"]))


class Names:
    """Name resolution for the registrations of one file."""

    def __init__(
        self, table: SymbolTable, source: SourceFile, locals_: Mapping[str, Mapping[str, JSON]]
    ) -> None:
        self.table, self.source, self.locals = table, source, locals_
        self.module = source.module or ""
        kinds = (SpanKind.CLASS, SpanKind.FUNCTION)
        self.definitions = {s.fq_symbol_path: i for i, s in enumerate(source.spans) if s.kind in kinds}

    def resolve(self, where: Where, dotted: str) -> Symbol | None:
        """What ``dotted``, written at ``where``, means (None: unresolvable)."""
        first, _, rest = dotted.partition(".")
        found = self._local(where.scope, first)
        if found is None and where.line is not None:
            found = self._at_line(first, where.line)
        if found is None:
            return self.table.resolve(self.module, dotted)
        symbol = found[0]
        for part in rest.split(".") if rest else []:
            symbol = self.table.member(symbol, part) if symbol is not None else None
        return symbol

    def definition(self, span: int) -> Symbol:
        """The function or class at span ``span`` of this file, as a symbol."""
        fq = self.source.spans[span].fq_symbol_path
        kind: SymbolKind = "class" if self.source.spans[span].kind is SpanKind.CLASS else "function"
        return Symbol(kind, f"{self.module}.{fq}", self.module, self.source.path, span)

    def _local(self, scope: str, name: str) -> tuple[Symbol | None] | None:
        """``(symbol,)`` when an enclosing function binds ``name`` (symbol None if unknown), else None."""
        parts = scope.split(".") if scope else []
        for cut in range(len(parts), 0, -1):
            function = ".".join(parts[:cut])
            names = self.locals.get(function)
            if names is None:
                continue  # a class body, whose names enclosed functions do not see
            nested = self.definitions.get(f"{function}.{name}")
            if nested is not None:
                return (self.definition(nested),)
            if name in names:
                value = names[name]
                if isinstance(value, dict):
                    return (self._imported(value),)
                return (self._variable(function, name, value),)
        return None

    def _at_line(self, name: str, line: int) -> tuple[Symbol | None] | None:
        """The module binding of ``name`` in effect at ``line``, when the module binds it more than
        once (None: the final namespace answers)."""
        facts = self.table.facts.get(self.module)
        bindings = [b for b in facts.bindings if b.name == name] if facts is not None else []
        before = [b for b in bindings if self.source.spans[b.span].start_line < line]
        if len(bindings) < 2 or not before or before[-1].kind == "star" or before[-1] is bindings[-1]:
            return None
        return (self._binding(before[-1]),)

    def _binding(self, b: Binding) -> Symbol | None:
        """What one module-level binding statement of this file binds."""
        path, module = self.source.path, self.module
        if b.kind in ("import", "from"):
            value: dict[str, JSON] = (
                {"import": b.module} if b.kind == "import" else {"from": b.module, "attr": b.attr}
            )
            found = self._imported(value)
            return found.via(((path, b.span),)) if found is not None else None
        cls = self.table.facts[module].classes.get(b.qualname or "")
        if b.kind == "class" and cls is not None:
            record = cls.record
            return Symbol("class", f"{module}.{b.qualname}", module, path, b.span, facts=record)
        kind: SymbolKind = "function" if b.kind == "function" else "attribute"
        return Symbol(kind, f"{module}.{b.qualname or b.name}", module, path, b.span, facts=b.record)

    def _imported(self, value: Mapping[str, JSON]) -> Symbol | None:
        """What ``import a.b`` (``{"import": "a.b"}``) or ``from m import x`` binds here."""
        if "import" in value:
            return self._absolute(str(value["import"]), module=True)
        base = absolute_module(self.module, self.source.is_package, str(value["from"]))
        return self._absolute(f"{base}.{value['attr']}", module=False) if base is not None else None

    def _absolute(self, dotted: str, *, module: bool) -> Symbol | None:
        """An absolute dotted name: first-party through the symbol table, else external."""
        parts = dotted.split(".")
        module_map = self.table.program.module_map
        for cut in range(len(parts), 0, -1):
            head = ".".join(parts[:cut])
            path = module_map.paths.get(head)
            if path is None:
                continue
            symbol: Symbol | None = Symbol("module", head, head, path, 0)
            for part in parts[cut:]:
                symbol = self.table.member(symbol, part) if symbol is not None else None
            return symbol
        return None if parts[0] in module_map.top_level else external_symbol(dotted, module=module)

    def _variable(self, function: str, name: str, callee: JSON) -> Symbol | None:
        """A function-local variable assigned a call (None for anything else); its facts say in
        which function the callee is to be resolved (``scope``)."""
        if not isinstance(callee, str):
            return None
        value = {"value": {"kind": "call", "callee": callee, "args": [], "kwargs": {}}, "scope": function}
        dotted = f"{self.module}.{function}.{name}"
        span = self.definitions.get(function)
        return Symbol("attribute", dotted, self.module, self.source.path, span, facts=value)
