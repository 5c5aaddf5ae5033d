"""The vocabulary of the model frameworks: which outside names are roots, decorators and field makers.

Names arrive as *external expressions* from ``evaluate``: the dotted name a symbol leaves the
repository with, where a call is written ``()`` (``sqlalchemy.orm.declarative_base()``,
``flask_sqlalchemy.SQLAlchemy().Model``, ``sqlalchemy.orm.registry().mapped``). Libraries
re-export their names from many submodules, so matching uses the top-level package and the last
segment (``pydantic.main.BaseModel`` and ``pydantic.BaseModel`` are the same root); a ``v1``
segment marks pydantic's v1 compatibility layer. When a name cannot be resolved at all (an
external star import, a conditional import the symbol table cannot follow), ``written_guess``
accepts a few unambiguous spellings as written.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

Style = Literal[
    "model",  # pydantic BaseModel (v2 rules unless the class is v1-flavoured)
    "model_v1",  # a root that only exists in pydantic v1
    "root_model",  # pydantic RootModel: one field, ``root``
    "sqlmodel",
    "declarative_class",  # DeclarativeBase: its direct subclasses are declarative bases
    "declarative_object",  # declarative_base() and friends: every subclass is mapped
]

DecoratorKind = Literal[
    "dataclass", "pydantic_dataclass", "attrs_s", "attrs_define", "attrs_dataclass", "sa_mapped", "sa_base"
]

SA_PROPERTIES = frozenset(
    {
        "Column",
        "mapped_column",
        "relationship",
        "relation",
        "column_property",
        "synonym",
        "composite",
        "deferred",
        "query_expression",
        "dynamic_loader",
    }
)
"""Constructs whose class attribute becomes a mapper attribute (``inspect(cls).attrs``)."""

MAPPED_ANNOTATIONS = frozenset({"Mapped", "WriteOnlyMapped", "DynamicMapped"})
ATTRS_FIELDS = frozenset({"ib", "attrib", "field"})
FRAMEWORK_TOPS = frozenset(
    {
        "pydantic",
        "pydantic_settings",
        "sqlalchemy",
        "sqlmodel",
        "attr",
        "attrs",
        "dataclasses",
        "flask_sqlalchemy",
    }
)
"""Top-level packages of the model frameworks."""
NEUTRAL_TOPS = frozenset({"typing", "typing_extensions", "abc", "builtins", "collections", "enum"})
"""Outside packages whose classes add no fields to a model (``Generic[T]``, ``ABC``, ``str``)."""


@dataclass(frozen=True, slots=True)
class Root:
    """A framework base class (or base object) a model inherits from."""

    framework: str
    style: Style


def parts(external: str) -> tuple[str, str]:
    """The top-level package and the last segment of an external expression."""
    return external.split(".", 1)[0], external.rsplit(".", 1)[-1]


_ROOTS = {
    ("pydantic", "BaseModel"): Root("pydantic", "model"),
    ("pydantic", "RootModel"): Root("pydantic", "root_model"),
    ("pydantic", "GenericModel"): Root("pydantic", "model_v1"),
    ("pydantic", "BaseSettings"): Root("pydantic", "model_v1"),
    ("pydantic_settings", "BaseSettings"): Root("pydantic", "model"),
    ("sqlmodel", "SQLModel"): Root("sqlmodel", "sqlmodel"),
    ("sqlalchemy", "DeclarativeBase"): Root("sqlalchemy", "declarative_class"),
    ("sqlalchemy", "DeclarativeBaseNoMeta"): Root("sqlalchemy", "declarative_class"),
    ("sqlalchemy", "declarative_base()"): Root("sqlalchemy", "declarative_object"),
    ("sqlalchemy", "generate_base()"): Root("sqlalchemy", "declarative_object"),
}


@lru_cache(maxsize=4096)
def root(external: str) -> Root | None:
    """The framework root an external base names, if it is one (``.v1.`` makes pydantic's v1)."""
    top, leaf = parts(external)
    if top == "flask_sqlalchemy":
        flask = leaf == "Model" and "SQLAlchemy()" in external
        return Root("sqlalchemy", "declarative_object") if flask else None
    found = _ROOTS.get((top, leaf))
    if found is not None and top == "pydantic" and ".v1." in f".{external}.":
        return Root("pydantic", "model_v1")
    return found


def decorator(external: str) -> DecoratorKind | None:
    """What a class decorator (its callee, for the call form) does, if it makes a model."""
    top, leaf = parts(external)
    if top == "dataclasses" and leaf == "dataclass":
        return "dataclass"
    if top == "pydantic" and leaf == "dataclass":
        return "pydantic_dataclass"
    if top in ("attr", "attrs"):
        kinds: dict[str, DecoratorKind] = {
            "s": "attrs_s",
            "attrs": "attrs_s",
            "define": "attrs_define",
            "frozen": "attrs_define",
            "mutable": "attrs_define",
            "dataclass": "attrs_dataclass",
        }
        return kinds.get(leaf)
    if top == "sqlalchemy" and leaf in ("mapped", "mapped_as_dataclass"):
        return "sa_mapped"
    if top == "sqlalchemy" and leaf in ("as_declarative", "as_declarative_base"):
        return "sa_base"
    return None


_WRITTEN = {
    "dataclass": "dataclasses.dataclass",
    "BaseModel": "pydantic.BaseModel",
    "BaseSettings": "pydantic_settings.BaseSettings",
    "SQLModel": "sqlmodel.SQLModel",
    "DeclarativeBase": "sqlalchemy.orm.DeclarativeBase",
    "declared_attr": "sqlalchemy.orm.declared_attr",
    "Field": "pydantic.Field",
    "Relationship": "sqlmodel.Relationship",
    **{name: f"sqlalchemy.orm.{name}" for name in SA_PROPERTIES},
}


def written_guess(dotted: str) -> str | None:
    """An external name for an unresolvable name written in an unambiguous way, else None."""
    if dotted.split(".", 1)[0] in ("attr", "attrs", "dataclasses", "pydantic", "sqlalchemy", "sqlmodel"):
        return dotted
    leaf = dotted.rsplit(".", 1)[-1]
    return _WRITTEN.get(leaf)


def is_sa_property(external: str) -> bool:
    """``Column``, ``relationship`` ... (SQLAlchemy, Flask-SQLAlchemy's ``db.``, SQLModel's)."""
    top, leaf = parts(external)
    if top == "sqlmodel":
        return leaf == "Relationship"
    return top in ("sqlalchemy", "flask_sqlalchemy") and leaf in SA_PROPERTIES


def is_relationship(external: str) -> bool:
    """A construct whose first argument names the related class."""
    top, leaf = parts(external)
    return top in ("sqlalchemy", "flask_sqlalchemy", "sqlmodel") and leaf in (
        "relationship",
        "relation",
        "dynamic_loader",
        "Relationship",
    )


def is_declared_attr(external: str) -> bool:
    """``@declared_attr`` / ``@declared_attr.cascading`` (``.directive`` makes no mapper attribute)."""
    top, _ = parts(external)
    segments = external.split(".")
    return top == "sqlalchemy" and "declared_attr" in segments and segments[-1] != "directive"


def is_attrs_field(external: str) -> bool:
    """``attr.ib()`` / ``attr.attrib()`` / ``attrs.field()``."""
    top, leaf = parts(external)
    return top in ("attr", "attrs") and leaf in ATTRS_FIELDS


def is_pydantic_field(external: str) -> bool:
    """``pydantic.Field`` (a v1 un-annotated field's value)."""
    top, leaf = parts(external)
    return top in ("pydantic", "sqlmodel") and leaf == "Field"


def is_neutral(external: str) -> bool:
    """An outside base that contributes no fields (typing, abc, builtins, enum)."""
    return parts(external)[0] in NEUTRAL_TOPS
