"""Attribute and call steps over static values, and what symbol-table answers mean as values.

``attribute`` looks a name up on a module (the symbol table), a class or instance (the class's
method resolution order, then instance attributes), ``super()`` (past the class in its order) or
something external (the dotted name grows). ``call`` gives what calling a value returns: an
instance for a class, the function a first-party function statically returns (else its return
annotation), an external instance for an external callable (a few factories are known to return
a specific type, e.g. ``sessionmaker()()`` is a SQLAlchemy ``Session``).
"""

from __future__ import annotations

from collections.abc import Callable
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

from kb_assets.core.callgraph.exprs import segments
from kb_assets.core.callgraph.guards import UNSET
from kb_assets.core.callgraph.hierarchy import Member
from kb_assets.core.callgraph.index import ScopeRef
from kb_assets.core.callgraph.values import (
    FORM,
    NO_FORMS,
    NO_SPANS,
    Cls,
    Def,
    Either,
    Ext,
    ExtInst,
    Fn,
    Inst,
    Mod,
    Resolved,
    Span,
    Super,
    Value,
    either,
    forms_of,
    union_spans,
)
from kb_assets.core.symbols.model import Symbol

if TYPE_CHECKING:
    from kb_assets.core.callgraph.evaluate import Evaluator

RESULT_TYPES: tuple[tuple[str, str], ...] = (
    ("sqlalchemy.orm*.sessionmaker()", "sqlalchemy.orm.Session"),
    ("sqlalchemy.orm*.scoped_session()", "sqlalchemy.orm.Session"),
    ("sqlalchemy.ext.asyncio*.async_sessionmaker()", "sqlalchemy.ext.asyncio.AsyncSession"),
    ("sqlalchemy*.create_engine", "sqlalchemy.engine.Engine"),
    ("sqlalchemy.ext.asyncio*.create_async_engine", "sqlalchemy.ext.asyncio.AsyncEngine"),
    ("sqlalchemy*Engine.connect", "sqlalchemy.engine.Connection"),
    ("sqlalchemy*Engine.begin", "sqlalchemy.engine.Connection"),
    ("sqlmodel*.create_engine", "sqlalchemy.engine.Engine"),
    ("requests.session", "requests.Session"),
    ("redis*.from_url", "redis.Redis"),
    ("redis*.StrictRedis", "redis.Redis"),
)
"""(pattern of the external callable, the type its result has): what a few factories return."""

_TYPED_ROOTS = tuple(sorted({p.split("*", 1)[0].split(".", 1)[0] for p, _ in RESULT_TYPES}))
_TASK_METHODS = frozenset({"delay", "apply_async", "s", "si", "signature"})
_UNSET: object = object()


class Members:
    """The attribute/call half of an ``Evaluator``."""

    def __init__(self, ev: Evaluator) -> None:
        self.ev = ev
        self._tasks: dict[Def, bool] = {}
        self._results: dict[Fn, Resolved | None] = {}
        self._returning: dict[Fn, int] = {}
        """Functions whose result is being computed, with their depth (``guards``)."""
        self._definitions: dict[tuple[ScopeRef, str], Resolved] = {}
        self._imported: dict[tuple[str, str], Resolved | None] = {}
        self._lookups: dict[tuple[object, ...], Resolved | None] = {}
        self._results_deps: dict[Fn, int] = {}
        self._imported_deps: dict[tuple[str, str], int] = {}
        self._lookups_deps: dict[tuple[object, ...], int] = {}
        """What each memoized answer read (``guards``, ``reads``)."""

    def release(self) -> None:
        """Drop what the memoized answers read (``Evaluator.release``); the answers stay."""
        self._results_deps.clear()
        self._imported_deps.clear()
        self._lookups_deps.clear()

    def close(self) -> None:
        """Let go of the evaluator (``Evaluator.close``)."""
        del self.ev

    # -- values of definitions, modules and symbols ----------------------------------------------
    def definition(self, ref: ScopeRef, form: str) -> Resolved:
        """A nested or top-level definition as a value."""
        key = (ref, form)
        self.ev.reads.mark(ref.path)
        found = self._definitions.get(key)
        if found is None:
            d = self.ev.scopes.defn(ref)
            found = self._definitions[key] = Resolved(Cls(d) if d.kind == "class" else Fn(d), FORM[form])
        return found

    def module(self, name: str, form: str) -> Resolved | None:
        """A module by absolute name: first-party, or external (None: first-party but missing)."""
        program = self.ev.scopes.program
        if name in program.module_map.paths or name in self.ev.table.namespaces.namespace_packages:
            return Resolved(Mod(name), FORM[form])
        if name.split(".", 1)[0] in program.module_map.top_level:
            return None
        return Resolved(Ext(name), FORM[form])

    def imported(self, base: str, attr: str) -> Resolved | None:
        """What ``from base import attr`` binds (memoized)."""
        key = (base, attr)
        guards = self.ev.guards
        found = guards.recall(self._imported, self._imported_deps, key)
        if found is not UNSET:
            return found  # type: ignore[return-value]
        return guards.memoized(self._imported, self._imported_deps, key, lambda: self._import(base, attr))

    def _import(self, base: str, attr: str) -> Resolved | None:
        if base in self.ev.scopes.program.module_map.paths:
            symbol = self.ev.lookup(base, attr)
            return (
                self.symbol(symbol, "import")
                if symbol is not None
                else self.module(f"{base}.{attr}", "import")
            )
        if base in self.ev.table.namespaces.namespace_packages:
            return self.module(f"{base}.{attr}", "import")
        found = self.module(base, "import")
        return found.to(Ext(f"{base}.{attr}")) if found is not None and type(found.value) is Ext else None

    def symbol(self, symbol: Symbol, form: str) -> Resolved | None:
        """A symbol-table answer as a value (module-level assignments are followed); the import
        statements followed to it are spans it was read from."""
        found = self._symbol(symbol, form)
        return found.through(_chain_spans(symbol)) if found is not None else None

    def _symbol(self, symbol: Symbol, form: str) -> Resolved | None:
        if symbol.external is not None:
            return Resolved(Ext(symbol.external), FORM[form])
        if symbol.kind == "module" and symbol.dotted is not None:
            return Resolved(Mod(symbol.dotted), FORM[form])
        if symbol.kind in ("function", "class"):
            ref = self.ev.scopes.at_span(symbol.path, symbol.span)
            if ref is not None:
                return self.definition(ref, form)
            return None
        return self._assigned(symbol, form)

    def _assigned(self, symbol: Symbol, form: str) -> Resolved | None:
        """``h = helper`` / ``svc = Service()`` / ``db: Session = ...`` at module level."""
        facts = symbol.facts or {}
        path = self.ev.scopes.program.module_map.paths.get(symbol.module or "")
        if path is None or path not in self.ev.scopes.records:
            return None
        ref = ScopeRef(path, 0)
        value, annotation = facts.get("value") or {}, facts.get("annotation") or {}
        found: Resolved | None = None
        if value.get("kind") == "name":
            found = self.ev.expr(ref, str(value["dotted"]))
        elif value.get("kind") == "call" and value.get("callee"):
            found = self.ev.expr(ref, f"{value['callee']}()")
        if found is None and annotation.get("kind") == "name":
            found = self.ev.typed(ref, str(annotation["dotted"]), "annotated")
        if found is None or symbol.path is None or symbol.span is None:
            return None
        return found.plus(form, "assignment").through({(symbol.path, symbol.span)})

    # -- steps ------------------------------------------------------------------------------------
    def attribute(self, r: Resolved, name: str) -> Resolved | None:  # noqa: PLR0911 - one return per value kind
        """``value.name``."""
        v = r.value
        if type(v) is Either:
            return self._each(r, v, lambda option: self.attribute(option, name))
        if type(v) is Mod:
            found = self.imported(v.name, name)
            return found.after(r) if found is not None else None
        if type(v) is Ext:
            return r.to(Ext(f"{v.name}.{name}"))
        if type(v) is ExtInst:
            return r.to(Ext(f"{v.type}.{name}"))
        if type(v) is Cls or type(v) is Inst or type(v) is Super:
            found = self._lookup(v, name)
            return found.after(r) if found is not None else None
        if type(v) is Fn and name in _TASK_METHODS and self._is_task(v.defn):
            return r.to(Ext(f"celery.Task.{name}"))
        return None

    def _lookup(self, v: Cls | Inst | Super, name: str) -> Resolved | None:
        """``name`` looked up on a class, an instance or ``super()``, from nothing (memoized: the
        forms and spans of what led to ``v`` are added by the caller)."""
        # Keyed by the value's type and fields rather than the value: a dataclass hashes and compares
        # in Python code, a tuple of a type, a ``Def`` and strings in C (Super, rare, is kept whole).
        kind = type(v)
        key = (kind, v.defn, name) if kind is not Super else (v, name)
        known = self._lookups.get(key, _UNSET)  # one lookup
        if known is not _UNSET:
            if self._lookups_deps:
                self.ev.reads.bits |= self._lookups_deps.get(key, 0)
            return known  # type: ignore[return-value]
        return self.ev.guards.memoized(
            self._lookups, self._lookups_deps, key, lambda: self._looked_up(v, name)
        )

    def _looked_up(self, v: Cls | Inst | Super, name: str) -> Resolved | None:
        r = Resolved(v)
        if type(v) is Super:
            member = self.ev.hierarchy.find(v.defn, name, after=v.defn, instance=v.instance)
            return self._member(r, member, v.defn, v.defn, instance=v.instance, form="super")
        instance = type(v) is Inst
        member = self.ev.hierarchy.find(v.defn, name, instance=instance)
        return self._member(r, member, v.defn, None, instance=instance, form="inherited")

    def _member(
        self, r: Resolved, member: Member | None, start: Def, after: Def | None, *, instance: bool, form: str
    ) -> Resolved | None:
        """The value a class lookup found, read from every class it consulted (unless it is the
        class's own method, whose span is the callee's)."""
        if member is None:
            return None
        extra = (form,) if after is not None or member.owner != start else ()
        own = member.definition is not None and member.owner == start and after is None
        consulted = [] if own else self.ev.hierarchy.consulted(start, member.owner, after)
        spans = {(c.path, c.span) for c in consulted} | {self.ev.scopes.span(s) for s, _ in member.values}
        r = r.through(spans)
        if member.definition is not None:
            found = self.definition(member.definition, "direct")
            flag = self.ev.scopes.record(member.definition).get("flag")
            if type(found.value) is not Fn:
                return r.to(found.value, *extra)
            if flag == "prop" and instance:
                return None
            bound = flag == "cm" or (instance and flag != "sm")
            return r.to(Fn(found.value.defn, bound=bound, receiver=start), *extra)
        if member.type is not None:
            typed = self.ev.typed(member.scope, member.type, "annotated")
            return typed.after(r).through({self.ev.scopes.span(member.scope)}).plus(*extra) if typed else None
        found_value = self.ev.agree(
            [self.ev.bound(scope, value) for scope, value in member.values], "assignment"
        )
        return found_value.after(r).plus(*extra) if found_value is not None else None

    def call(self, r: Resolved) -> Resolved | None:
        """What calling the value returns."""
        v = r.value
        if type(v) is Either:
            return self._each(r, v, self.call)
        if type(v) is Cls:
            return r.to(Inst(v.defn))
        if type(v) is Ext:
            return r.to(self.external_instance(v.name))
        if type(v) is ExtInst:
            typed = _result_type(f"{v.type}()")
            return r.to(ExtInst(typed)) if typed is not None else None
        if type(v) is Fn:
            return self._returned(r, v)
        return None

    def _returned(self, r: Resolved, fn: Fn) -> Resolved | None:
        """The function's statically known result (memoized; recursion answers unknown)."""
        guards = self.ev.guards
        found = guards.recall(self._results, self._results_deps, fn)
        if found is UNSET:
            found = guards.ask(
                self._results,
                self._results_deps,
                self._returning,
                fn,
                compute=lambda: self._result(fn),
                unknown=None,
            )
        return found.after(r) if isinstance(found, Resolved) else None

    def _result(self, fn: Fn) -> Resolved | None:
        """Its returns when they are known, else its return annotation (the function's span is read)."""
        ref = self.ev.function_value(fn)
        if ref is None:
            return None
        rec = self.ev.scopes.record(ref)
        r = Resolved(fn, via=frozenset({self.ev.scopes.span(ref)}))
        if rec.get("gen"):
            return None
        returns = [e for e in rec.get("ret", []) if e != ""]
        found = self.ev.agree([self._return_value(fn, ref, e) for e in returns], "returned")
        if found is not None:
            extra = ("returned_function",) if isinstance(found.value, Fn | Cls | Either) else ()
            return Resolved(found.value, forms_of(*extra), union_spans(r.via, found.via))
        annotation = rec.get("rt")
        outer = self.ev.scopes.parent(ref) or ScopeRef(ref.path, 0)
        typed = self.ev.typed(outer, str(annotation), "annotated") if annotation else None
        return typed.after(r) if typed is not None else None

    def _return_value(self, fn: Fn, ref: ScopeRef, expr: str | None) -> Resolved | None:
        """One returned expression; ``self``/``cls`` stand for the receiver the method was found on."""
        if expr is None:
            return None
        rec = self.ev.scopes.record(ref)
        params = rec.get("params") or []
        parts = segments(expr)
        head, calls = parts[0]
        if fn.receiver is None or not params or head != params[0] or rec.get("flag") == "sm":
            return self.ev.expr(ref, expr)
        start = Cls(fn.receiver) if rec.get("flag") == "cm" else Inst(fn.receiver)
        return self.ev.apply(Resolved(start, FORM["self_method"]), calls, parts[1:])

    def _each(self, r: Resolved, v: Either, step: Callable[[Resolved], Resolved | None]) -> Resolved | None:
        """A step applied to every alternative (unknown as soon as one is)."""
        results = [step(Resolved(option, r.forms, r.via)) for option in v.options]
        if any(x is None for x in results):
            return None
        value = either([x.value for x in results if x is not None])
        if value is None:
            return None
        forms, via = NO_FORMS, NO_SPANS
        for x in results:
            if x is not None:
                forms |= x.forms
                via = union_spans(via, x.via)
        return Resolved(value, forms, via)

    def external_instance(self, name: str) -> Value:
        """What calling the external ``name`` returns (an instance of it, unless known otherwise)."""
        return ExtInst(_result_type(name) or name)

    def _is_task(self, d: Def) -> bool:
        """Whether a first-party function is decorated as a Celery task (``@app.task``, ``@shared_task``)."""
        self.ev.reads.mark(d.path)
        if d not in self._tasks:
            self._tasks[d] = False
            ref = ScopeRef(d.path, d.scope) if d.scope is not None else None
            parent = self.ev.scopes.parent(ref) if ref is not None else None
            if parent is not None and ref is not None:
                for site in self.ev.scopes.record(parent).get("calls", []):
                    extra = site[2] if len(site) > 2 else {}
                    if extra.get("d") and extra.get("a") == [f"#{ref.scope}"]:
                        word = str(site[0]).rstrip("()").rsplit(".", 1)[-1]
                        self._tasks[d] = self._tasks[d] or word in ("task", "shared_task")
        return self._tasks[d]


def _result_type(name: str) -> str | None:
    """The known result type of calling ``name`` (patterns in ``RESULT_TYPES``)."""
    if not name.startswith(_TYPED_ROOTS):
        return None
    return next((typed for pattern, typed in RESULT_TYPES if fnmatchcase(name, pattern)), None)


def _chain_spans(symbol: Symbol) -> frozenset[Span]:
    """The import statements followed to a symbol, as spans."""
    return frozenset(symbol.chain) if symbol.chain else NO_SPANS
