"""The claim floor, the reply reader and the describe targets as pure functions, and the shape of
the model-backed jobs (never part of ``kb index``)."""

from __future__ import annotations

import pytest

from kb_assets.core.describe.targets import Unit, build_targets
from kb_assets.core.llm.floor import Floor, SpanText
from kb_assets.core.llm.reply import Claim, Reply, ReplyError, parse_reply
from kb_assets.core.models import Grounding, Span, SpanKind
from kb_assets.core.modules import map_modules
from kb_assets.core.program import Program, SourceFile

ORDERS = '''"""Orders. Mentions ghost_helper in a docstring only."""

from shop.pricing import apply_discount


def total(order, rate):
    # calls secret_thing? no: a comment
    return apply_discount(order.subtotal(), rate)
'''


def _span_text(span_id: str, fq: str, start: int, end: int, kind: SpanKind = SpanKind.FUNCTION) -> SpanText:
    lines = ORDERS.splitlines()
    return SpanText(
        span_id,
        "shop/orders.py",
        "shop.orders",
        kind,
        fq,
        start,
        end,
        "\n".join(lines[start - 1 : end]),
    )


MODULE = _span_text("m" * 64, "<module>", 1, 8, SpanKind.MODULE)
TOTAL = _span_text("t" * 64, "total", 6, 8)
FILE_SPANS = {
    "shop/orders.py": [
        Span("m" * 64, SpanKind.MODULE, "<module>", 1, 8),
        Span("t" * 64, SpanKind.FUNCTION, "total", 6, 8),
    ]
}


def _resolver(module: str, chain: str) -> str | None:
    return {"apply_discount": "shop.pricing.apply_discount"}.get(chain) if module == "shop.orders" else None


def _verdict(*claims: Claim, spans: tuple[SpanText, ...] = (TOTAL,)) -> tuple[list[str], list[str]]:
    verdict = Floor(FILE_SPANS, _resolver).validate(Reply("s", claims), spans)
    return [c.text for c in verdict.kept], [reason for _, reason in verdict.dropped]


@pytest.mark.parametrize(
    ("symbols", "kept"),
    [
        (["total"], True),
        (["shop.orders.total"], True),  # its own dotted path
        (["orders.total"], True),  # a segment-aligned suffix
        (["`total()`"], True),  # quotes, backticks and a call are forgiven
        (["apply_discount"], True),  # written in its code
        (["shop.pricing.apply_discount"], True),  # what that name resolves to
        (["order.subtotal"], True),
        (["ghost_helper"], False),  # only in a docstring
        (["secret_thing"], False),  # only in a comment
        (["made_up"], False),
        ([], False),
        (["total", "made_up"], False),  # every symbol must be backed
        (["rders.total"], False),  # not segment-aligned
        (["return"], False),  # a keyword is not a symbol
        (["total; drop"], False),
    ],
)
def test_a_claim_survives_only_when_every_symbol_is_backed(symbols: list[str], kept: bool) -> None:
    survived, _ = _verdict(Claim("A statement.", tuple(symbols)))
    assert survived == (["A statement."] if kept else [])


def test_a_module_span_backs_what_is_defined_inside_it() -> None:
    survived, _ = _verdict(Claim("It defines total.", ("shop.orders.total",)), spans=(MODULE,))
    assert survived == ["It defines total."]
    survived, reasons = _verdict(Claim("", ("total",)), Claim("x", ("nope",)))
    assert survived == []
    assert reasons == ["empty_text", "unbacked:nope"]


def test_confidence_is_below_one_and_scales_with_survivors() -> None:
    verdict = Floor(FILE_SPANS, _resolver).validate(
        Reply("s", (Claim("a", ("total",)), Claim("b", ("nope",)))), (TOTAL,)
    )
    assert verdict.confidence == 0.4
    assert verdict.kept[0].span_ids == ("t" * 64,)


def test_replies_as_objects_text_or_fenced_json() -> None:
    good = {"summary": "S.", "claims": [{"text": "t", "symbols": ["a"]}, {"text": "u", "symbols": "a"}]}
    assert parse_reply(good).claims == (Claim("t", ("a",)), Claim("u", ()))
    assert parse_reply('Sure:\n```json\n{"summary": "S.", "claims": []}\n```').summary == "S."
    for bad in ("no json here", {"summary": "", "claims": []}, {"summary": "S.", "claims": {}}, [1]):
        with pytest.raises(ReplyError):
            parse_reply(bad)


def test_entity_and_process_path_units_become_targets() -> None:
    """Kinds whose extractors land later are described like routes: grounded as the unit is."""
    spans = (
        Span("c" * 64, SpanKind.CLASS, "Customer", 1, 3),
        Span("f" * 64, SpanKind.FUNCTION, "flow", 5, 6),
    )
    source = SourceFile("shop/models.py", "b" * 40, "shop.models", False, spans, {})
    program = Program("s" * 40, {"shop/models.py": source}, map_modules(["shop/models.py"]))
    units = [
        Unit(
            "entity",
            "entity:shop.models.Customer",
            {"name": "shop.models.Customer"},
            (Grounding("c" * 64, "shop/models.py", "entity"),),
        ),
        Unit(
            "process_path",
            "path:a->b",
            {"chain": ["a", "b"]},
            (Grounding("f" * 64, "shop/models.py", "step"),),
        ),
    ]
    targets = {t.logical_key: t for t in build_targets(program, units)}
    assert targets["describe:shop.models.Customer"].kind == "entity"
    assert targets["describe:shop.models.Customer"].grounding == units[0].grounding
    assert targets["describe:a->b"].kind == "process_path"
    assert targets["describe:shop.models"].kind == "module"


def test_model_passes_have_their_own_jobs() -> None:
    from kb_assets.definitions import defs
    from kb_assets.jobs import DESCRIBE_JOB, INDEX_JOB, MINE_JOB

    index = {n.name for n in defs.resolve_job_def(INDEX_JOB).graph.node_defs}
    assert "knowledge_snapshot" in index
    assert not index & {"descriptions", "decisions"}
    describe = {n.name for n in defs.resolve_job_def(DESCRIBE_JOB).graph.node_defs}
    assert describe == {"descriptions", "descriptions_claims_backed"}
    mine = {n.name for n in defs.resolve_job_def(MINE_JOB).graph.node_defs}
    assert mine == {"decisions", "decisions_claims_backed"}


@pytest.mark.parametrize(
    ("remote", "expected"),
    [
        ("https://github.com/acme/shop.git", ("acme", "shop")),
        ("git@github.com:acme/shop.git", ("acme", "shop")),
        ("ssh://git@github.com/acme/shop", ("acme", "shop")),
        ("https://gitlab.com/acme/shop.git", None),
        (None, None),
    ],
)
def test_github_remotes(remote: str | None, expected: tuple[str, str] | None) -> None:
    from kb_resources.github import github_repository

    assert github_repository(remote) == expected


def test_squash_merge_numbers_and_token_channel() -> None:
    from kb_assets.core.mine.decisions import squash_pr_number
    from kb_resources.github import PullSource

    assert squash_pr_number("Round totals (#12)\n\nbody (#13)") == 12
    assert squash_pr_number("Merge pull request #12 from x") is None
    source = PullSource("http://example.com", ("a", "b"), "tok")
    assert "Authorization" not in source._headers("http://example.com/repos/a/b/pulls/1")
    assert source._headers("https://api.github.com/x")["Authorization"] == "Bearer tok"
    assert source._headers("http://127.0.0.1:9/x")["Authorization"] == "Bearer tok"
