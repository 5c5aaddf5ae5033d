"""The entities extractor on small programs: recognition, fields, references, grounding and gaps.

Programs are built from source text with ``tests.programs`` (the real collectors, no git, no
database). Each test states one rule of ``kb_assets.core.extractors.entities``.
"""

from __future__ import annotations

from typing import Any

from kb_assets.core.extractors.base import Extraction
from kb_assets.core.extractors.entities import EntitiesExtractor
from kb_assets.core.program import Program
from tests.programs import program_from_files

SA = "from sqlalchemy import Column, ForeignKey, Integer, String\n"
SA_ORM = "from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship\n"


def _extract(files: dict[str, str]) -> tuple[Program, Extraction]:
    program = program_from_files({"app/__init__.py": "", **files})
    return program, EntitiesExtractor().resolve(program)


def entities(files: dict[str, str]) -> dict[str, Any]:
    """name -> payload of every entity the extractor finds."""
    _, extraction = _extract(files)
    return {d.payload["name"]: d.payload for d in extraction.drafts}


def fields(files: dict[str, str]) -> dict[str, list[str]]:
    """name -> field names."""
    return {name: payload["fields"] for name, payload in entities(files).items()}


def gaps(files: dict[str, str]) -> list[tuple[str, str]]:
    """(reason, detail) of every gap."""
    _, extraction = _extract(files)
    return sorted((g.reason, g.detail) for g in extraction.gaps)


def test_declarative_bases_and_abstract_classes_are_not_entities() -> None:
    """A bare ``DeclarativeBase`` subclass, a ``declarative_base()`` object, an ``@as_declarative``
    class and ``__abstract__`` classes are not entities; their subclasses are, and the abstract
    base's and the ``cls=`` mixin's columns count, after the class's own."""
    found = fields(
        {
            "app/base.py": SA + SA_ORM + "class Base(DeclarativeBase):\n    pass\n"
            "class Abstract(Base):\n    __abstract__ = True\n    created: Mapped[int]\n"
            "class A(Abstract):\n    __tablename__ = 'a'\n"
            "    id: Mapped[int] = mapped_column(primary_key=True)\n",
            "app/classic.py": SA + "from sqlalchemy.orm import declarative_base, as_declarative, registry\n"
            "class Mixin:\n    uid = Column(Integer)\n"
            "Legacy = declarative_base(cls=Mixin)\n"
            "class B(Legacy):\n    __tablename__ = 'b'\n    id = Column(Integer, primary_key=True)\n"
            "@as_declarative()\nclass Declared:\n    pass\n"
            "class C(Declared):\n    __tablename__ = 'c'\n    id = Column(Integer, primary_key=True)\n"
            "reg = registry()\nGenerated = reg.generate_base()\n"
            "class D(Generated):\n    __tablename__ = 'd'\n    id = Column(Integer, primary_key=True)\n"
            "@reg.mapped\nclass E:\n    __tablename__ = 'e'\n    id = Column(Integer, primary_key=True)\n",
        }
    )
    assert found == {
        "app.base.A": ["id", "created"],
        "app.classic.B": ["id", "uid"],
        "app.classic.C": ["id"],
        "app.classic.D": ["id"],
        "app.classic.E": ["id"],
    }


def test_models_are_found_through_aliases_reexports_and_first_party_bases_across_files() -> None:
    """A model whose base is a first-party model three files away, imported through a package
    re-export under an alias, is an entity with its ancestors' fields first."""
    found = entities(
        {
            "app/core/__init__.py": "from ._base import Root as PublicRoot\n",
            "app/core/_base.py": "from pydantic import BaseModel\nclass Root(BaseModel):\n    id: int\n",
            "app/mid.py": "from app.core import PublicRoot\nclass Mid(PublicRoot):\n    name: str\n",
            "app/leaf.py": "import app.mid as m\nclass Leaf(m.Mid):\n    extra: bool = False\n",
        }
    )
    assert found["app.leaf.Leaf"]["fields"] == ["id", "name", "extra"]
    assert found["app.leaf.Leaf"]["bases"] == ["app.mid.Mid"]
    assert found["app.core._base.Root"]["framework"] == "pydantic"


def test_pydantic_v2_fields() -> None:
    """ClassVar, private ``_x``, ``model_config``, an inner ``Config``, methods, properties and
    ``Final`` with a value are not fields; an overridden field keeps its first position; a plain
    mixin's annotations count (v2 collects the whole MRO); ``RootModel`` has ``root``."""
    found = fields(
        {
            "app/m.py": "from typing import ClassVar, Final\n"
            "from pydantic import BaseModel, ConfigDict, RootModel\n"
            "class Mixin:\n    tag: str = ''\n"
            "class A(BaseModel):\n    model_config = ConfigDict()\n    a: int\n    b: int\n"
            "    k: ClassVar[int] = 1\n    _p: int = 0\n    F: Final = 3\n"
            "    @property\n    def x(self) -> int: return 1\n    def m(self) -> None: ...\n"
            "class B(Mixin, A):\n    c: int\n    a: str\n"
            "class R(RootModel[list[int]]):\n    pass\n",
        }
    )
    assert found == {"app.m.A": ["a", "b"], "app.m.B": ["a", "b", "tag", "c"], "app.m.R": ["root"]}


def test_pydantic_v1_fields() -> None:
    """A v1 model (an un-annotated field, ``class Config``) lists base fields, then annotated, then
    un-annotated ones; plain mixins add nothing."""
    found = fields(
        {
            "app/m.py": "from pydantic import BaseModel\nclass Mixin:\n    ignored: int = 0\n"
            "class A(BaseModel):\n    count = 1\n    name: str\n    class Config:\n        orm_mode = True\n"
            "class B(Mixin, A):\n    extra = 'x'\n    size: int\n",
        }
    )
    assert found == {"app.m.A": ["name", "count"], "app.m.B": ["name", "count", "size", "extra"]}


def test_dataclass_fields() -> None:
    """``ClassVar`` (also as a string), ``InitVar`` and ``KW_ONLY`` are not fields, ``_x`` and
    ``field(init=False)`` are; an undecorated subclass is no entity and adds nothing; the call form
    ``@dataclasses.dataclass(...)`` counts."""
    found = entities(
        {
            "app/m.py": "import dataclasses\nfrom dataclasses import InitVar, KW_ONLY, field\n"
            "from typing import ClassVar\n"
            "@dataclasses.dataclass(frozen=True)\nclass A:\n    a: int\n    s: 'ClassVar[int]' = 1\n"
            "    i: InitVar[int] = 0\n    _: KW_ONLY\n    _h: int = field(init=False, default=0)\n"
            "class Plain(A):\n    p: int = 0\n"
            "@dataclasses.dataclass\nclass B(Plain):\n    b: int = 0\n    a: int = 1\n",
        }
    )
    assert {n: e["fields"] for n, e in found.items()} == {"app.m.A": ["a", "_h"], "app.m.B": ["a", "_h", "b"]}
    assert found["app.m.A"]["decorator"] == "dataclasses.dataclass"


def test_attrs_fields() -> None:
    """``attr.s`` counts ``attr.ib()`` only; ``auto_attribs=True`` and ``define`` count annotations,
    except when ``define`` sees an un-annotated ``field()``; an overridden attribute moves last;
    ``these=`` is flagged as dynamic."""
    found = entities(
        {
            "app/m.py": "import attr, attrs\n"
            "@attr.s\nclass A:\n    x = attr.ib()\n    y: int = 0\n"
            "@attr.s(auto_attribs=True)\nclass B:\n    x: int\n    y: int = 0\n"
            "@attrs.define\nclass C:\n    x = attrs.field()\n    y: int = 0\n"
            "@attrs.define\nclass D(B):\n    z: int = 0\n    x: int = 1\n"
            "@attr.s(these={'q': attr.ib()})\nclass E:\n    pass\n",
        }
    )
    assert {n: e["fields"] for n, e in found.items()} == {
        "app.m.A": ["x"],
        "app.m.B": ["x", "y"],
        "app.m.C": ["x"],
        "app.m.D": ["y", "z", "x"],
        "app.m.E": [],
    }
    assert found["app.m.E"]["gap"] == "dynamic_fields"


def test_sqlmodel_tables_and_plain_models() -> None:
    """SQLModel classes are entities with or without ``table=True``; relationships are fields of
    tables only; ``table`` is the declared or default table name, null for non-tables."""
    found = entities(
        {
            "app/m.py": "from typing import Optional\nfrom sqlmodel import Field, Relationship, SQLModel\n"
            "class TeamBase(SQLModel):\n    name: str\n    heroes: list['Hero'] = Relationship()\n"
            "class Team(TeamBase, table=True):\n"
            "    id: Optional[int] = Field(default=None, primary_key=True)\n"
            "    heroes: list['Hero'] = Relationship(back_populates='team')\n"
            "class Hero(SQLModel, table=True):\n    id: int = Field(primary_key=True)\n"
            "    team: Optional[Team] = Relationship(back_populates='heroes')\n",
        }
    )
    assert {n: (e["fields"], e["table"]) for n, e in found.items()} == {
        "app.m.TeamBase": (["name"], None),
        "app.m.Team": (["name", "heroes", "id"], "team"),
        "app.m.Hero": (["id", "team"], "hero"),
    }
    assert found["app.m.Team"]["references"] == ["app.m.Hero"]


def test_flask_sqlalchemy_models_and_backrefs() -> None:
    """``db = SQLAlchemy()`` then ``db.Model``/``db.Column``/``db.relationship`` across files; a
    ``backref`` adds a field (and a reference back) to the target class."""
    found = entities(
        {
            "app/ext.py": "from flask_sqlalchemy import SQLAlchemy\ndb = SQLAlchemy()\n",
            "app/models.py": "from app.ext import db\n"
            "class User(db.Model):\n    id = db.Column(db.Integer, primary_key=True)\n"
            "class Post(db.Model):\n    id = db.Column(db.Integer, primary_key=True)\n"
            "    author = db.relationship('User', backref=db.backref('posts', lazy=True))\n",
        }
    )
    assert found["app.models.User"]["fields"] == ["id", "posts"]
    assert found["app.models.User"]["references"] == ["app.models.Post"]
    assert found["app.models.Post"]["references"] == ["app.models.User"]


def test_references_in_annotations_and_relationships() -> None:
    """Entities named in ``list[X]``, ``Optional[X]``, ``X | None``, ``dict[str, X]``, string
    forward references, ``Annotated[X, ...]`` and ``relationship(X)`` count; ``Literal["X"]`` and
    non-entity classes do not; ``relationship("Name")`` finds the mapped class through the
    registry even when the module does not import it; a target that names no entity is a gap."""
    files = {
        "app/orm.py": SA + SA_ORM + "class Base(DeclarativeBase):\n    pass\n"
        "class Parent(Base):\n    __tablename__ = 'p'\n    id = Column(Integer, primary_key=True)\n"
        "    kids = relationship('Kid')\n    ghosts = relationship('Ghost')\n",
        "app/kids.py": SA + "from app.orm import Base, Parent\nfrom sqlalchemy.orm import relationship\n"
        "class Kid(Base):\n    __tablename__ = 'k'\n    id = Column(Integer, primary_key=True)\n"
        "    parent = relationship(Parent)\n",
        "app/api.py": "from typing import Annotated, Literal, Optional\n"
        "from pydantic import BaseModel, Field\n"
        "class Plain:\n    pass\n"
        "class A(BaseModel):\n    x: int\n"
        "class B(BaseModel):\n    a: list[A]\n    b: Optional['A']\n    c: A | None\n    d: dict[str, 'C']\n"
        "    e: Annotated[A, Field(description='C')]\n    f: Literal['C']\n    g: Plain\n"
        "class C(BaseModel):\n    own: 'list[C]'\n",
    }
    found = entities(files)
    assert found["app.api.B"]["references"] == ["app.api.A", "app.api.C"]
    assert found["app.api.C"]["references"] == ["app.api.C"]
    assert found["app.orm.Parent"]["references"] == ["app.kids.Kid"]
    assert found["app.kids.Kid"]["references"] == ["app.orm.Parent"]
    assert (
        "unresolved_reference",
        "app.orm.Parent.ghosts: relationship target 'Ghost' is no entity",
    ) in gaps(files)


def test_type_arguments_of_parametrized_generic_bases_are_references() -> None:
    """pydantic substitutes a parametrized base's type arguments into the inherited fields, so
    ``Page[Item]`` and ``RootModel[list[Item]]`` refer to ``Item``; a stdlib dataclass does not."""
    found = entities(
        {
            "app/m.py": "from dataclasses import dataclass\nfrom typing import Generic, TypeVar\n"
            "from pydantic import BaseModel, RootModel\nT = TypeVar('T')\n"
            "class Item(BaseModel):\n    x: int\n"
            "class Page(BaseModel, Generic[T]):\n    items: list[T]\n"
            "class ItemPage(Page[Item]):\n    cursor: str = ''\n"
            "class Items(RootModel[list[Item]]):\n    pass\n"
            "@dataclass\nclass Box(Generic[T]):\n    value: T\n"
            "@dataclass\nclass ItemBox(Box[Item]):\n    pass\n"
            "class Options(BaseModel, Generic[T]):\n    def combine(self, other: T) -> T: ...\n"
            "class ItemOptions(Options['Item']):\n    flag: bool = False\n"
            "class Many(RootModel[list[T]], Generic[T]):\n    pass\n"
            "class ManyItems(Many[Item]):\n    pass\n",
        }
    )
    assert {n: e["references"] for n, e in found.items()} == {
        "app.m.Item": [],
        "app.m.Page": [],
        "app.m.ItemPage": ["app.m.Item"],
        "app.m.Items": ["app.m.Item"],
        "app.m.Box": [],
        "app.m.ItemBox": [],
        "app.m.Options": [],
        "app.m.ItemOptions": [],
        "app.m.Many": [],
        "app.m.ManyItems": ["app.m.Item"],
    }


def test_references_through_type_aliases_across_files() -> None:
    """A field typed with a first-party alias (``AnyCreds = Union[A, B]``, ``X: TypeAlias = ...``,
    imported from another module) refers to the entities the alias names."""
    found = entities(
        {
            "app/creds.py": "from typing import Annotated, TypeAlias, Union\n"
            "from pydantic import BaseModel, Field\n"
            "class KeyCreds(BaseModel):\n    key: str\n"
            "class DefaultCreds(BaseModel):\n    pass\n"
            "AnyCreds = Union[KeyCreds, DefaultCreds]\n"
            "Tagged: TypeAlias = Annotated[AnyCreds, Field(discriminator='type')]\n",
            "app/config.py": "from pydantic import BaseModel\nfrom app.creds import AnyCreds, Tagged\n"
            "class Config(BaseModel):\n    creds: AnyCreds\n"
            "class Other(BaseModel):\n    tagged: 'list[Tagged]'\n",
        }
    )
    assert found["app.config.Config"]["references"] == ["app.creds.DefaultCreds", "app.creds.KeyCreds"]
    assert found["app.config.Other"]["references"] == ["app.creds.DefaultCreds", "app.creds.KeyCreds"]


def test_a_nested_class_shadows_a_module_level_class_of_the_same_name() -> None:
    """``model: Model`` in a class body that defines its own ``Model`` names the nested class."""
    found = entities(
        {
            "app/m.py": "from pydantic import BaseModel\nclass Model(BaseModel):\n    a: int\n"
            "class Outer(BaseModel):\n    class Model(BaseModel):\n        id: str\n    model: Model\n"
            "class Other(BaseModel):\n    model: Model\n",
        }
    )
    assert found["app.m.Outer"]["references"] == ["app.m.Outer.Model"]
    assert found["app.m.Other"]["references"] == ["app.m.Model"]


def test_references_in_long_unions() -> None:
    """Every member of a long union counts, written ``A | B | ...`` or ``Union[A, B, ...]``."""
    names = [f"M{i}" for i in range(20)]
    models = "".join(f"class {n}(BaseModel):\n    x: int = 0\n" for n in names)
    found = entities(
        {
            "app/m.py": "from typing import Union\nfrom pydantic import BaseModel\n"
            + models
            + f"class Pipe(BaseModel):\n    any: {' | '.join(names)} | None = None\n"
            + f"class Sub(BaseModel):\n    any: Union[{', '.join(names)}]\n"
        }
    )
    expected = sorted(f"app.m.{n}" for n in names)
    assert found["app.m.Pipe"]["references"] == expected
    assert found["app.m.Sub"]["references"] == expected


def test_grounding_covers_class_bases_and_references_across_files() -> None:
    """The entity is grounded on its class, each first-party class of its MRO and the assignment
    that makes its declarative base (``base``), and each referenced entity (``reference``)."""
    program, extraction = _extract(
        {
            "app/db.py": "from sqlalchemy.orm import declarative_base\nBase = declarative_base()\n",
            "app/mixins.py": "from sqlalchemy import Column, Integer\n"
            "class Stamp:\n    at = Column(Integer)\n",
            "app/models.py": SA + "from sqlalchemy.orm import relationship\nfrom app.db import Base\n"
            "from app.mixins import Stamp\n"
            "class A(Stamp, Base):\n    __tablename__ = 'a'\n    id = Column(Integer, primary_key=True)\n"
            "    bs = relationship('B')\n"
            "class B(Base):\n    __tablename__ = 'b'\n    id = Column(Integer, primary_key=True)\n",
        }
    )
    draft = next(d for d in extraction.drafts if d.logical_key == "entity:app.models.A")
    named = sorted(
        (
            g.path,
            g.role,
            next(s.fq_symbol_path for s in program.files[g.path].spans if s.span_id == g.span_id),
        )
        for g in draft.grounding
    )
    assert named == [
        ("app/db.py", "base", "Base"),
        ("app/mixins.py", "base", "Stamp"),
        ("app/models.py", "class", "A"),
        ("app/models.py", "reference", "B"),
    ]
    assert draft.payload["fields"] == ["id", "bs", "at"]


def test_gaps_for_dynamic_models_unknown_bases_and_outside_mixins() -> None:
    """``create_model``/``make_dataclass`` are ``dynamic_model`` gaps; a class with fields on an
    unknown model-like base is ``unknown_model_base``; an entity with an outside mixin is flagged
    ``external_base``."""
    files = {
        "app/m.py": "from dataclasses import make_dataclass\nfrom pydantic import BaseModel, create_model\n"
        "from odm import Document\nfrom somelib import AuditMixin\n"
        "def build():\n    return create_model('X', a=(int, 1))\n"
        "P = make_dataclass('P', ['x'])\n"
        "class Article(Document):\n    title: str\n"
        "class Audited(AuditMixin, BaseModel):\n    x: int\n",
    }
    reasons = [reason for reason, _ in gaps(files)]
    assert reasons == ["dynamic_model", "dynamic_model", "external_base", "unknown_model_base"]
    assert entities(files)["app.m.Audited"]["gap"] == "external_base"


def test_the_framework_repository_itself() -> None:
    """When the repository is the framework (pydantic's own sources), its ``BaseModel`` is a first-
    party class: not an entity itself, but its subclasses are."""
    found = fields(
        {
            "pydantic/__init__.py": "from .main import BaseModel\n",
            "pydantic/main.py": "class BaseModel:\n    pass\n",
            "app/m.py": "from pydantic import BaseModel\nclass A(BaseModel):\n    a: int\n",
        }
    )
    assert found == {"app.m.A": ["a"]}


def test_resolution_is_deterministic() -> None:
    """Resolving the same program twice yields identical drafts and gaps."""
    files = {
        "app/m.py": "from pydantic import BaseModel\n"
        "class A(BaseModel):\n    b: 'B'\nclass B(A):\n    c: int\n"
    }
    program = program_from_files({"app/__init__.py": "", **files})
    assert EntitiesExtractor().resolve(program) == EntitiesExtractor().resolve(program)


def test_script_only_classes_and_method_calls_named_like_factories() -> None:
    """A model under ``if __name__ == "__main__":`` never exists on import: no entity, a
    ``script_model`` gap; ``editor.create_model(...)`` on some object is no dynamic model."""
    files = {
        "app/m.py": "from pydantic import BaseModel\n"
        "def migrate(editor):\n    editor.create_model(object)\n"
        "if __name__ == '__main__':\n    class Demo(BaseModel):\n        x: int\n",
    }
    assert entities(files) == {}
    assert [reason for reason, _ in gaps(files)] == ["script_model"]


def test_declarative_base_made_from_a_class_of_the_same_name() -> None:
    """``Base = declarative_base(cls=Base)``: the columns of the class the name meant before the
    assignment are inherited by every model."""
    found = fields(
        {
            "app/m.py": SA + "from sqlalchemy.orm import declarative_base\n"
            "class Base:\n    id = Column(Integer, primary_key=True)\n"
            "Base = declarative_base(cls=Base)\n"
            "class A(Base):\n    __tablename__ = 'a'\n    name = Column(String)\n",
        }
    )
    assert found == {"app.m.A": ["name", "id"]}


def test_framework_aliases_defined_by_the_framework_itself() -> None:
    """In the framework's own repository, ``frozen = partial(define, ...)`` is still ``frozen``."""
    found = entities(
        {
            "attr/__init__.py": "from ._next_gen import define, frozen\n",
            "attr/_next_gen.py": "from functools import partial\ndef define(cls=None, **kw): ...\n"
            "frozen = partial(define, frozen=True)\n",
            "app/m.py": "import attr\n@attr.frozen\nclass P:\n    x: int\n",
        }
    )
    assert found["app.m.P"]["fields"] == ["x"]
    assert found["app.m.P"]["decorator"] == "attr._next_gen.frozen"
