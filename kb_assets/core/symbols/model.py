"""What the symbol table answers with: ``Symbol`` (what a name means) and ``Exports`` (a module's API).

A ``Symbol`` is either first-party — ``dotted`` is the definition's dotted path
(``shop.models.Order``; a module is its module name), ``path``/``span`` locate the definition
(a class or function span, an assignment span, the module span 0; a class-level attribute has
its class's span, since assignments inside class bodies are not spans) — or *external*: a name
that leaves the repository, with ``external`` set to the outside dotted name
(``pydantic.BaseModel``) and ``dotted``/``path``/``span`` unset. ``chain`` lists every binding
step followed to get there, as ``(path, span ordinal)`` of the import statements (the first one
is the binding in the module asked about, when that binding is an import), so extractors can
ground on each re-export hop. A name defined where it was asked about has an empty chain.

``kind`` is ``class``/``function``/``attribute``/``module``. For an external symbol it only
reflects the statement that bound it: ``module`` for ``import x``, ``attribute`` otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from kb_assets.core.models import JSON

SymbolKind = Literal["class", "function", "attribute", "module"]

Hop = tuple[str, int]
"""One binding step: (file path, span ordinal of the statement in that file)."""


@dataclass(frozen=True, slots=True)
class Symbol:
    """What a name means once imports, aliases and re-exports are followed."""

    kind: SymbolKind
    dotted: str | None
    module: str | None
    path: str | None
    span: int | None
    chain: tuple[Hop, ...] = ()
    external: str | None = None
    facts: Mapping[str, JSON] | None = field(default=None, compare=False, hash=False)
    """The defining record from the ``symbols`` facts (bases, decorators, value summary), if any."""

    @property
    def is_external(self) -> bool:
        """True when the name leaves the repository (``external`` holds its dotted name)."""
        return self.external is not None

    @property
    def target(self) -> str | None:
        """The dotted name it ends at: the definition's, else the external one."""
        return self.dotted if self.dotted is not None else self.external

    def via(self, hops: tuple[Hop, ...]) -> Symbol:
        """The same symbol reached through ``hops`` first."""
        if not hops:
            return self
        # The constructor, not ``dataclasses.replace``: resolving a large code base takes this
        # step tens of thousands of times, and ``replace`` inspects the fields on every call.
        s = self
        return Symbol(s.kind, s.dotted, s.module, s.path, s.span, hops + s.chain, s.external, s.facts)


@dataclass(frozen=True, slots=True)
class Exports:
    """The names a module exposes: its ``__all__`` when it has one, else its public names.

    ``declared`` tells whether the module assigns ``__all__``; ``dynamic`` holds ``(line, text)``
    of each ``__all__`` statement that could not be read statically. When ``__all__`` is declared
    but nothing static is left, ``names`` falls back to the public names.
    """

    names: tuple[str, ...]
    declared: bool
    dynamic: tuple[tuple[int, str], ...] = ()


def external_symbol(name: str, *, module: bool, chain: tuple[Hop, ...] = ()) -> Symbol:
    """A symbol for ``name`` outside the repository."""
    kind: SymbolKind = "module" if module else "attribute"
    return Symbol(kind=kind, dotted=None, module=None, path=None, span=None, chain=chain, external=name)
