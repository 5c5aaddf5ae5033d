"""Domain entities (``entity``): models of pydantic, dataclasses, attrs, SQLAlchemy and SQLModel.

One artifact per model class, keyed ``entity:DOTTED``, found through inheritance across files by
the symbol table (imports, aliases, re-exports, first-party bases at any depth,
``Base = declarative_base()`` and ``db = SQLAlchemy()`` assignments). The rules, each in the
module that owns it:

* which classes are entities, and of which framework — ``entities.classify`` (a bare declarative
  ``Base`` and ``__abstract__`` classes are not; SQLModel classes without ``table=True`` are, as
  the pydantic-like models they are, with ``table: null``);
* ``fields`` — names, inherited ones first, in the order the framework itself collects them —
  ``entities.fields`` (``ClassVar``, private ``_x`` pydantic attributes, ``model_config``, inner
  ``Config``, methods and properties are not fields; SQLAlchemy relationships are);
* ``references`` — the first-party entities named in field annotations and ``relationship()``
  targets, sorted and de-duplicated — ``entities.references``;
* the payload's other fields and its ``gap`` flags — ``entities.build``.

Grounding: the class statement (role ``class``); every first-party class of its MRO and every
assignment that makes a base, such as ``Base = declarative_base()`` (``base``), since the fields
and the entity's very existence depend on them; each referenced entity's class (``reference``).

Gaps: ``dynamic_model`` (``create_model(...)``, ``make_dataclass``, ``attr.make_class``,
``dataclass(Cls)`` as a call: a known gap, fields never read), ``unknown_model_base`` (a class with
field-like attributes whose model-like base is unresolvable or an unknown outside class, e.g. a
model base from another library), ``unresolved_base``/``external_base``/``dynamic_fields`` (an
entity whose fields may be incomplete; also flagged in its payload) and
``unresolved_reference`` (a ``relationship()`` target that names no entity). Classes defined
inside functions are not seen (the symbol table does not record them); classes under
``if __name__ == "__main__":`` are not entities (they never exist when the module is imported) and
each is a ``script_model`` gap.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kb_assets.core.entities.build import SOURCE, EntityBuilder
from kb_assets.core.entities.dynamic import collect_entity_facts
from kb_assets.core.extractors.base import Extraction, LocatedGrounding
from kb_assets.core.models import JSON
from kb_assets.core.program import Program
from kb_assets.core.spans import ParsedSource

EXTRACTOR_ID = SOURCE


class EntitiesExtractor:
    """The ``entities`` asset's extractor (reads the shared ``symbols`` facts)."""

    extractor_id = EXTRACTOR_ID
    version = "1"
    facts_version = "2"
    kind = "entity"
    asset_name = "entities"
    description = (
        "Domain entities (pydantic, dataclasses, attrs, SQLAlchemy, SQLModel): fields and references."
    )

    def collect(self, source: ParsedSource) -> JSON:
        """Run-time model construction sites and ``__main__``-block classes of one blob."""
        return collect_entity_facts(source)

    def resolve(self, program: Program) -> Extraction:
        """One draft per entity of the commit, plus gaps for what cannot be read."""
        builder = EntityBuilder(program)
        drafts, gaps = builder.build()
        gaps.extend(builder.dynamic_gaps())
        return Extraction(drafts=tuple(drafts), gaps=tuple(gaps))

    def render(self, payload: Mapping[str, JSON], grounding: Sequence[LocatedGrounding]) -> dict[str, JSON]:
        """The payload as stored: it has no location-derived fields."""
        return dict(payload)
