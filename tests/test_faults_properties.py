"""Property-based tests of the pieces every id rests on: the parse of arbitrary bytes, the
fingerprint normalization, and the identity functions of ``kb_assets.core.ids``.

``tests/test_fingerprint.py`` already fuzzes comments, renames and numbers over the identity
fixtures; here hypothesis generates whole modules and hostile inputs:

- any bytes and any Python-ish token soup: ``parse_source``/``analyze_blob`` never raise, are
  deterministic, and every span's lines lie inside the blob;
- generated modules under formatting-only rewrites (blank lines, trailing blanks, CRLF, quote
  style, redundant parentheses, hex/underscore spelling of integers) keep every span id;
- ``canonical_json``, ``span_id``, ``artifact_id``: independent of key and grounding order and of
  duplicates, and injective across field boundaries (no two field splits hash alike).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from kb_assets.core import ids
from kb_assets.core.blobs import analyze_blob
from kb_assets.core.extractors.registry import COLLECTORS, EXTRACTORS
from kb_assets.core.json_text import canonical_json
from kb_assets.core.models import JSON, Grounding, SpanKind
from kb_assets.core.spans import ParseLimits, parse_source

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LIMITS = ParseLimits(max_bytes=200_000, timeout_s=5.0)

_SOUP = [
    "def ", "class ", "async ", "await ", "lambda", "yield ", "return ", "import ", "from ", " as ",
    "if ", "else", "elif ", "try", "except ", "with ", "for ", " in ", "while ", "match ", "case ",
    "(", ")", "[", "]", "{", "}", ":", ",", ".", "*", "**", "@", "=", "->", "+", "-", "\\", "#", ";",
    "'", '"', '"""', "f'", "b'", "x", "y1", "self", "app", "router", "FastAPI()", "APIRouter()",
    ".get('/p')", ".include_router(", "prefix=", "field_validator", "listens_for", "__all__",
    "0", "1.5", "0x1f", "None", "\n", "    ", "\t", " ", "\r\n", "\x0c", "é", "模块", "\U0001f600",
]  # fmt: skip


@FUZZ
@given(data=st.binary(max_size=400))
def test_any_bytes_parse_or_become_gaps(data: bytes) -> None:
    """Arbitrary bytes: never an exception, the same answer twice, sane line ranges."""
    _check_blob(data)


@FUZZ
@given(pieces=st.lists(st.sampled_from(_SOUP), max_size=80))
def test_python_ish_soup_parses_or_becomes_gaps(pieces: list[str]) -> None:
    """Token soup that is often almost Python reaches the extractors' collectors; none may raise."""
    _check_blob("".join(pieces).encode("utf-8"))


def _check_blob(data: bytes) -> None:
    first = analyze_blob("b" * 40, data, EXTRACTORS, LIMITS, COLLECTORS)
    second = analyze_blob("b" * 40, data, EXTRACTORS, LIMITS, COLLECTORS)
    assert first == second
    parsed, gaps = parse_source(data, LIMITS)
    if parsed is None:
        assert gaps, "a blob that is not understood must say why"
        assert first.spans == ()
    for span in first.spans:
        assert ids.is_id(span.span_id)
        assert 1 <= span.start_line <= span.end_line <= max(1, first.line_count)
    for gap in first.gaps:
        assert gap.reason
        assert "\n" not in gap.reason


# --- generated modules under formatting-only rewrites -------------------------------------------

_NAMES = st.text("abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=6).map(lambda s: f"n_{s}")
_WORDS = st.text("abcdefghijklmnopqrstuvwxyz ", max_size=10)


@dataclass(frozen=True)
class Statement:
    """One generated top-level statement, renderable in several equivalent spellings."""

    template: str
    name: str
    number: int
    word: str

    def render(self, *, quote: str, parens: bool, spelled: str) -> list[str]:
        value = f"({self.number})" if parens else str(self.number)
        value = value.replace(str(self.number), spelled)
        text = f"{quote}{self.word}{quote}"
        if self.template == "assign":
            return [f"{self.name} = {value}"]
        if self.template == "string":
            return [f"{self.name} = {text}"]
        if self.template == "import":
            return [f"import {self.name}"]
        if self.template == "from":
            return [f"from pkg.{self.name} import {self.name}_x as {self.name}"]
        if self.template == "def":
            return [f"def {self.name}(a, b={value}):", f"    return a + b * {value}"]
        return [
            f"class C{self.name}:",
            f"    attr = {text}",
            "",
            f"    def m_{self.name}(self, x):",
            f"        return self.attr, x + {value}",
        ]


_STATEMENTS = st.lists(
    st.builds(
        Statement,
        template=st.sampled_from(["assign", "string", "import", "from", "def", "class"]),
        name=_NAMES,
        number=st.integers(min_value=0, max_value=10**6),
        word=_WORDS,
    ),
    min_size=1,
    max_size=12,
    unique_by=lambda s: s.name,
)


def _module(
    statements: list[Statement],
    *,
    quote: str = "'",
    parens: bool = False,
    hex_numbers: bool = False,
    blank: int = 2,
    trailing: str = "",
    newline: str = "\n",
) -> bytes:
    lines: list[str] = []
    for statement in statements:
        spelled = hex(statement.number) if hex_numbers else str(statement.number)
        lines += statement.render(quote=quote, parens=parens, spelled=spelled)
        lines += [""] * blank
    return newline.join(line + trailing if line else line for line in lines).encode("utf-8") + b"\n"


def _span_ids(source: bytes) -> list[tuple[str, str, str]]:
    parsed, gaps = parse_source(source)
    assert parsed is not None, (gaps, source)
    return [(s.kind.value, s.fq_symbol_path, s.span_id) for s in parsed.spans]


_STYLES = st.fixed_dictionaries(
    {
        "quote": st.sampled_from(["'", '"']),
        "parens": st.booleans(),
        "hex_numbers": st.booleans(),
        "blank": st.integers(min_value=0, max_value=3),
        "trailing": st.sampled_from(["", " ", "\t", "   "]),
        "newline": st.sampled_from(["\n", "\r\n"]),
    }
)


@FUZZ
@given(statements=_STATEMENTS, style=_STYLES)
def test_formatting_only_rewrites_keep_every_span_id(
    statements: list[Statement], style: dict[str, Any]
) -> None:
    """A generated module and any formatting-only respelling of it have the same span ids."""
    assert _span_ids(_module(statements, **style)) == _span_ids(_module(statements))


@FUZZ
@given(statements=_STATEMENTS, which=st.integers(min_value=0), bump=st.integers(min_value=1, max_value=99))
def test_changing_one_value_changes_the_module_id_only_where_it_lives(
    statements: list[Statement], which: int, bump: int
) -> None:
    """Changing one statement's number changes the module span id and the ids of the spans that
    contain it, and no other span's id."""
    target = statements[which % len(statements)]
    assume(target.template in ("assign", "def", "class"))
    changed = [
        Statement(s.template, s.name, s.number + bump, s.word) if s is target else s for s in statements
    ]
    before, after = _span_ids(_module(statements)), _span_ids(_module(changed))
    assert [(k, p) for k, p, _ in before] == [(k, p) for k, p, _ in after]
    assert before[0][2] != after[0][2]
    differ = {p for (_, p, a), (_, _, b) in zip(before, after, strict=True) if a != b}
    assert all(p == "<module>" or target.name in p for p in differ), differ


# --- identity functions --------------------------------------------------------------------------

_JSON: st.SearchStrategy[JSON] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=8)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)
_TEXT = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=["Cs"]), max_size=12)
_SPAN_IDS = st.text("0123456789abcdef", min_size=64, max_size=64)
_GROUNDING = st.lists(
    st.builds(
        Grounding,
        span_id=_SPAN_IDS,
        path=st.sampled_from(["a.py", "b/c.py"]),
        role=st.sampled_from(["x", "y"]),
    ),
    min_size=1,
    max_size=6,
)


def _reorder(value: JSON, seed: int) -> JSON:
    """The same JSON value with every object's keys inserted in another order."""
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: hash((k, seed)))
        return {k: _reorder(value[k], seed) for k in keys}
    if isinstance(value, list):
        return [_reorder(v, seed) for v in value]
    return value


@FUZZ
@given(value=_JSON, seed=st.integers())
def test_canonical_json_ignores_key_order_and_round_trips(value: JSON, seed: int) -> None:
    text = canonical_json(value)
    assert canonical_json(_reorder(value, seed)) == text
    assert json.loads(text) == value
    assert "\n" not in text


@FUZZ
@given(
    payload=st.dictionaries(st.text(max_size=6), _JSON, max_size=5),
    grounding=_GROUNDING,
    seed=st.integers(),
    key=_TEXT,
)
def test_artifact_id_ignores_grounding_order_duplicates_and_key_order(
    payload: dict[str, JSON], grounding: list[Grounding], seed: int, key: str
) -> None:
    def aid(rows: list[Grounding], body: dict[str, JSON]) -> str:
        return ids.artifact_id(
            logical_key=key, extractor_id="e", extractor_version="1", grounding=rows, payload=body
        )

    shuffled = sorted(grounding + grounding[:1], key=lambda g: hash((g, seed)))
    reordered = _reorder(payload, seed)
    assert isinstance(reordered, dict)
    assert aid(shuffled, reordered) == aid(grounding, payload)
    assert ids.is_id(aid(grounding, payload))


@FUZZ
@given(
    parts=st.lists(_TEXT, min_size=4, max_size=4),
    other=st.lists(_TEXT, min_size=4, max_size=4),
    grounding=_GROUNDING,
)
def test_artifact_id_fields_cannot_bleed_into_each_other(
    parts: list[str], other: list[str], grounding: list[Grounding]
) -> None:
    """Different (extractor id, version, logical key, model id) never share an id, even when their
    concatenations are equal (e.g. "ab"+"c" vs "a"+"bc")."""
    assume(parts != other)

    def aid(p: list[str]) -> str:
        return ids.artifact_id(
            extractor_id=p[0],
            extractor_version=p[1],
            logical_key=p[2],
            model_id=p[3] or None,
            grounding=grounding,
            payload={},
        )

    assert aid(parts) != aid(other)


@FUZZ
@given(
    left=st.tuples(_TEXT, _TEXT),
    right=st.tuples(_TEXT, _TEXT),
    kind=st.sampled_from(list(SpanKind)),
)
def test_span_id_is_injective_across_the_path_fingerprint_boundary(
    left: tuple[str, str], right: tuple[str, str], kind: SpanKind
) -> None:
    assume(left != right)
    assert ids.span_id("python", kind, *left) != ids.span_id("python", kind, *right)
    assert ids.span_id("python", kind, *left) == ids.span_id("python", kind, *left)
