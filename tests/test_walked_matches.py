"""The call-graph collector's nodes kept by the fingerprint walk give what the ``calls`` query gives.

``callgraph.walked`` rebuilds the query's matches from the nodes the parse's fingerprint walk kept,
instead of running the query over the tree again. These tests prove the two ways agree on the
facts (and on the matches each kind of consumer reads), that keeping nodes changes no fingerprint
token, and that a walk which could not keep every node hands the collector to the query.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from pathlib import Path

import pytest

from kb_assets.core import fingerprint
from kb_assets.core import treesitter as ts
from kb_assets.core.callgraph import walked
from kb_assets.core.callgraph.collect import collect_calls
from kb_assets.core.spans import ParsedSource, parse_source

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

TRICKY = b"""
import os
from pkg import helper as h


@decorate(lambda f: f)
@other
class Service(Base, metaclass=Meta):
    kind: str
    size: int = compute(1)

    @property
    def name(self, a=make(), *args, b: int = 2, **kw) -> str:
        global counter
        x = y = build(a)
        z: Thing = (w := fetch())
        n = (m := first() if cond() else second())
        total += 1
        for i, j in pairs():
            yield i
        data = [k for k in items() if check(k)]
        with open(path) as fh, mock.patch.object(
            Query, "add_q", side_effect=lambda self, q: add_q(self, q)
        ) as patched:
            fh.read()
        try:
            run(handler, cb=self.on_done)
        except (KeyError, ValueError) as exc:
            log(f"failed {exc!r}: {describe(exc):{width()}}")
        self.cache = Cache()

        def inner():
            nonlocal x
            return helper(x)(y)

        return inner


if __name__ == "__main__":
    main()
"""


def _parse(source: bytes) -> ParsedSource:
    parsed, gaps = parse_source(source)
    assert parsed is not None, gaps
    return parsed


def _by_consumer(found: list[tuple[int, walked.Match]]) -> dict[str, list[object]]:
    """Matches grouped as ``collect_calls`` splits them, each as its pattern and captured ranges."""
    groups: dict[str, list[object]] = defaultdict(list)
    for pattern, match in found:
        group = "definitions" if pattern in (0, 1) else {2: "decorators", 3: "calls"}.get(pattern, "bindings")
        captured = sorted(
            (name, [(n.start_byte, n.end_byte, n.kind_id) for n in nodes]) for name, nodes in match.items()
        )
        groups[group].append((pattern, captured))
    return dict(groups)


def test_the_walks_nodes_give_the_querys_matches_in_the_order_each_consumer_reads() -> None:
    """Definitions, decorators, calls and bindings alike: the same matches, in the same order within
    each group, including a ``with`` whose value holds a lambda (the query yields the lambda's
    parameters first) and a walrus the fingerprint walk emits without visiting."""
    parsed = _parse(TRICKY)
    assert parsed.walked is not None
    query = ts.matches(ts.query("calls"), parsed.root)
    ours = walked.matches(parsed.walked)
    assert _by_consumer(ours) == _by_consumer(query)
    assert len(ours) == len(query)


@pytest.mark.parametrize(
    "path", [*sorted(FIXTURES.rglob("*.py")), None], ids=lambda p: "tricky" if p is None else p.name
)
def test_call_facts_are_the_same_either_way(path: Path | None) -> None:
    """Every fixture file (and the tricky module): the facts from the kept nodes equal the facts
    from the query."""
    parsed, _ = parse_source(TRICKY if path is None else path.read_bytes())
    if parsed is None:
        return
    assert parsed.walked is not None
    assert collect_calls(parsed) == collect_calls(dataclasses.replace(parsed, walked=None))


def test_keeping_nodes_changes_no_fingerprint_token() -> None:
    """The walk that keeps nodes emits the very tokens and marks of the walk that does not."""
    parsed = _parse(TRICKY)
    plain = fingerprint.tokenize(parsed.root, TRICKY)
    keeping = fingerprint.tokenize(parsed.root, TRICKY, walked.KINDS)
    assert keeping.tokens == plain.tokens
    assert [(n.id, s, e) for n, s, e in keeping.marks] == [(n.id, s, e) for n, s, e in plain.marks]
    assert plain.kept is None
    assert keeping.kept is not None
    assert len(keeping.kept) > 40


def test_a_walk_cut_short_leaves_the_nodes_to_the_query(monkeypatch: pytest.MonkeyPatch) -> None:
    """When absurd nesting stops the walk from entering a subtree (here: any nested walk), it keeps
    nothing, and the collector runs the query: the facts are still whole."""
    expected = collect_calls(_parse(TRICKY))
    monkeypatch.setattr(fingerprint, "_MAX_NESTED_WALKS", 0)
    parsed = _parse(TRICKY)
    assert parsed.walked is None
    assert collect_calls(parsed) == expected


def test_a_kind_the_walk_rearms_cannot_be_kept() -> None:
    """Blocks and expression statements change action during a walk: keeping them is refused."""
    parsed = _parse(b"x = 1\n")
    with pytest.raises(ValueError, match="re-arms"):
        fingerprint.tokenize(parsed.root, b"x = 1\n", ts.kind_ids("block"))
