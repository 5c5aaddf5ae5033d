"""Tier-1 entities oracle: knowbase's domain entities on a hand-labelled fixture repository.

The fixture (``fixtures/entities_oracle``) spreads models over several files and packages:
SQLAlchemy 2.0 (``DeclarativeBase``, ``Mapped``/``mapped_column``, annotation-only ``Mapped``, a
mixin, an ``__abstract__`` base with a ``@declared_attr``, ``relationship`` with class and string
targets, ``column_property``, single-table inheritance, a base imported under an alias and models
re-exported by a package), classic declarative (``declarative_base()``, ``Column`` with a renamed
column, a backref), pydantic v2 (a shared base with ``model_config``, ``ClassVar``, ``PrivateAttr``,
a plain annotated mixin, an overridden field keeping its position, string forward references,
a generic model and its parametrized subclass, ``pydantic_settings.BaseSettings``), pydantic v1
through ``pydantic.v1`` (``class Config``, an un-annotated field, ``GenericModel``,
``BaseSettings``), dataclasses in both decorator forms (``ClassVar``, ``InitVar``, ``KW_ONLY``,
``field(init=False)``, a plain class in between, an overridden field), a pydantic dataclass,
attrs (``attr.s`` + ``attr.ib``, ``attrs.define``, ``attrs.frozen`` overriding), SQLModel (a
non-table base, two tables with ``Relationship``), a bare declarative ``Base`` (not an entity), a
``create_model`` gap and a model on an unknown third-party base. ``expected.json`` lists every
entity, its grounding and every gap by hand; ``bench/eval_entities.py`` confirmed every field
list against the frameworks themselves.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.gitfixtures import build_repo
from tests.kbfixtures import KbEnv

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
GAP_LINE = re.compile(r"^gap (?P<path>[^:]+?)(?::(?P<line>\d+))?: (?P<reason>\w+) \((?P<source>[\w.]+)\)")


@pytest.fixture
def oracle_repo(tmp_path: Path) -> Path:
    """The oracle fixture as a real git repository."""
    build_repo(FIXTURES / "entities_oracle", tmp_path / "shop")
    return tmp_path / "shop"


def _expected() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / "entities_oracle" / "expected.json").read_text())
    return data


def _entity(record: dict[str, Any]) -> list[Any]:
    p = record["payload"]
    return [p["name"], p["framework"], p["fields"], p["references"], p["bases"], p.get("table")]


def test_tier1_entities_oracle(kb_env: KbEnv, oracle_repo: Path) -> None:
    """Every hand-labelled entity is found with its framework, its fields in the framework's order,
    its references and bases, and nothing else is: no bare ``Base``, no abstract base, no mixin,
    no plain class; ``kb index`` exits 0, so every blocking check passed."""
    indexed = kb_env.kb("index", oracle_repo)
    assert indexed.code == 0, indexed.stderr
    records = kb_env.kb("export", oracle_repo, "--kind", "entity").jsonl()
    assert [_entity(r) for r in records] == sorted(_expected()["entities"])
    assert all(r["logical_key"] == f"entity:{r['payload']['name']}" for r in records)
    names = {r["payload"]["name"] for r in records}
    assert not names & {"shop.db.Base", "shop.db.TimestampMixin", "shop.db.AuditedBase", "shop.values.Plain"}


def test_tier1_entities_oracle_grounding(kb_env: KbEnv, oracle_repo: Path) -> None:
    """Each entity is grounded on its class, every first-party class and base-making assignment of
    its MRO (``base``), each referenced entity (``reference``) and each class whose backref adds
    one of its fields (``backref``), at the hand-labelled lines, across files; payloads carry no
    line numbers."""
    assert kb_env.kb("index", oracle_repo).code == 0
    expected = _expected()["grounding"]
    records = kb_env.kb("export", oracle_repo, "--kind", "entity").jsonl()
    assert {r["logical_key"] for r in records} == set(expected)
    for record in records:
        actual = sorted([g["file"], g["role"], g["start_line"]] for g in record["grounding"])
        assert actual == sorted(expected[record["logical_key"]]), record["logical_key"]
        assert "lines" not in record["payload"]


def test_tier1_entities_oracle_gaps(kb_env: KbEnv, oracle_repo: Path) -> None:
    """``create_model(...)`` (a known gap) and a model on an unknown third-party base are recorded
    gaps printed by ``kb index``, not silent omissions."""
    indexed = kb_env.kb("index", oracle_repo)
    assert indexed.code == 0, indexed.stderr
    gaps = set()
    for line in indexed.stdout.splitlines()[1:]:
        m = GAP_LINE.match(line)
        if m and m["source"] == "entities":
            gaps.add((m["path"], m["reason"], int(m["line"]) if m["line"] else None))
    assert gaps == {(p, r, n) for p, r, n in _expected()["gaps"]}
