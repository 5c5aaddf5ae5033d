"""What an expression is known to be, statically: the small value domain call resolution works in.

``Def`` names a first-party function or class definition (dotted path plus the span that defines
it). A ``Value`` is one of: a function (``Fn``; ``bound`` when its first parameter is supplied by
an instance or class), a class (``Cls``), an instance of a first-party class (``Inst``), a
first-party module (``Mod``), something external (``Ext``: a dotted name outside the repository,
callable, module or type), an instance of an external type (``ExtInst``), a parameter whose
argument is not known here (``Param``) and ``super()`` seen from a class (``Super``). Anything
else is unknown, which resolution spells ``None`` and never turns into an edge. ``Either`` holds the
few values a name may have when its bindings differ (every one of them must be known).

``Resolved`` pairs a value with the *forms* that produced it (``import``, ``self_method``,
``assignment``, ...), the vocabulary of ``call_edge.forms``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Literal, NamedTuple

DefKind = Literal["function", "class", "module"]

FORMS: tuple[str, ...] = (
    "direct",
    "import",
    "self_method",
    "inherited",
    "super",
    "instantiation",
    "init",
    "decorator",
    "closure",
    "passed_function",
    "returned_function",
    "assignment",
    "annotated",
    "returned",
)
"""The resolution forms, each one bit of a ``Forms`` mask (``returned``: internal only)."""

Forms = int
FORM: dict[str, Forms] = {name: 1 << i for i, name in enumerate(FORMS)}
NO_FORMS: Forms = 0
_INTERNAL = FORM["returned"]


def forms_of(*names: str) -> Forms:
    """The mask of some forms."""
    bits = 0
    for name in names:
        bits |= FORM[name]
    return bits


def form_names(bits: Forms) -> list[str]:
    """The public forms of a mask, sorted by name (``returned`` is internal and dropped); a fresh
    list each time, as it goes into a payload."""
    return list(_form_names(bits & ~_INTERNAL))


@functools.cache
def _form_names(bits: Forms) -> tuple[str, ...]:
    """Cached: a commit's tens of thousands of edges share a few dozen masks."""
    return tuple(sorted(name for i, name in enumerate(FORMS) if bits >> i & 1))


class Def(NamedTuple):
    """A first-party definition: a function, a class, or a module (the caller of top-level code).

    A named tuple, not a dataclass: definitions are dictionary keys on every hot path, and a tuple
    hashes and compares in C."""

    dotted: str
    path: str
    span: int
    kind: DefKind
    scope: int | None = None
    """Index of its scope in the file's call facts (None when the file has none)."""


@dataclass(frozen=True, slots=True)
class Fn:
    """A first-party function or method; ``bound``: called through an instance (or as a classmethod)."""

    defn: Def
    bound: bool = False
    receiver: Def | None = None
    """The class a method was looked up on (``Sub.create`` finds ``Base.create`` with receiver
    ``Sub``): inside it, ``self``/``cls`` stand for that class."""


@dataclass(frozen=True, slots=True)
class Cls:
    """A first-party class object."""

    defn: Def


@dataclass(frozen=True, slots=True)
class Inst:
    """An instance of a first-party class."""

    defn: Def


@dataclass(frozen=True, slots=True)
class Mod:
    """A first-party module."""

    name: str


@dataclass(frozen=True, slots=True)
class Ext:
    """Something outside the repository, by its dotted name (``requests.post``, ``builtins.open``)."""

    name: str


@dataclass(frozen=True, slots=True)
class ExtInst:
    """An instance of an external type (``sqlalchemy.orm.Session``)."""

    type: str


@dataclass(frozen=True, slots=True)
class Param:
    """A parameter of a first-party function (``path``/``scope`` locate the function's scope)."""

    path: str
    scope: int
    name: str


@dataclass(frozen=True, slots=True)
class Super:
    """``super()`` inside class ``defn``'s methods (``instance``: from a regular method)."""

    defn: Def
    instance: bool


@dataclass(frozen=True, slots=True)
class Either:
    """One of a few values: a name bound to different things on different branches."""

    options: tuple[Fn | Cls | Inst | Mod | Ext | ExtInst | Param | Super, ...]


Value = Fn | Cls | Inst | Mod | Ext | ExtInst | Param | Super | Either
MAX_OPTIONS = 4
"""More alternatives than this and a value is simply unknown."""


def either(values: list[Value]) -> Value | None:
    """The value that is one of ``values`` (flattened, de-duplicated, in a stable order)."""
    flat: dict[Value, None] = {}
    for v in values:
        for option in v.options if isinstance(v, Either) else (v,):
            flat[option] = None
    if not flat or len(flat) > MAX_OPTIONS:
        return None
    options = sorted(flat, key=repr)
    return options[0] if len(options) == 1 else Either(tuple(options))  # type: ignore[arg-type]


Span = tuple[str, int]
"""A span by (file path, ordinal)."""

NO_SPANS: frozenset[Span] = frozenset()


@dataclass(frozen=True, slots=True)
class Resolved:
    """A value, the resolution forms that led to it and the spans it was read from (``via``:
    import statements, assignments, classes and functions consulted besides the caller's own)."""

    value: Value
    forms: Forms = NO_FORMS
    via: frozenset[Span] = NO_SPANS

    def plus(self, *forms: str) -> Resolved:
        """The same value, reached with more forms."""
        return Resolved(self.value, self.forms | forms_of(*forms), self.via) if forms else self

    def to(self, value: Value, *forms: str) -> Resolved:
        """Another value reached from this one (forms and spans carried over)."""
        return Resolved(value, self.forms | forms_of(*forms), self.via)

    def through(self, spans: frozenset[Span] | set[Span]) -> Resolved:
        """The same value, also read from ``spans``."""
        if not spans or spans is self.via:
            return self
        return Resolved(self.value, self.forms, union_spans(self.via, spans))

    def after(self, earlier: Resolved) -> Resolved:
        """This value, reached after ``earlier`` (its forms and spans come along); itself when
        ``earlier`` adds nothing (about 40% of the time: no new object, the same value)."""
        forms, via = self.forms | earlier.forms, union_spans(self.via, earlier.via)
        if forms == self.forms and via is self.via:
            return self
        return Resolved(self.value, forms, via)


def union_spans(a: frozenset[Span], b: frozenset[Span] | set[Span]) -> frozenset[Span]:
    """``a | b``, reusing ``a`` or ``b`` when one holds the other (most unions add nothing)."""
    if not b or b is a:
        return a
    if not a:
        return b if isinstance(b, frozenset) else frozenset(b)
    if b <= a:
        return a
    if isinstance(b, frozenset) and a <= b:
        return b
    return a | b
