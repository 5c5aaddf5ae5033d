"""The next commit's call edges as a delta of the remembered ones (``edge_delta``): the spliced
sequences are the new keys' in sorted order with every kept key's id and signature, the
files' index names exactly the edges a change to each file touches, and the remembered ids with
the dropped ones cut out stay sorted."""

from __future__ import annotations

import random

import pytest

from kb_assets.core.callgraph.graph import call_graph
from kb_assets.core.extractors import edge_delta
from kb_assets.core.extractors.edge_delta import SIGNATURE_BYTES, UNSIGNED, EdgeKey, splice, touches, touching
from tests.programs import program_from_files
from tests.test_call_carry import V1


def _signature(n: int) -> bytes:
    return n.to_bytes(SIGNATURE_BYTES, "big")


def test_a_splice_is_the_new_keys_in_order_with_every_kept_keys_id_and_signature() -> None:
    """Against a plain rebuild, for random sets: keys removed (also next to each other and at
    both ends), added (also several at one place, before the first and after the last), both,
    and neither (the remembered key list is then kept as it is)."""
    rng = random.Random(20261206)
    for _ in range(300):
        universe = sorted((f"m{rng.randrange(40):02d}", f"f{rng.randrange(40):02d}") for _ in range(60))
        before = sorted(set(rng.sample(universe, rng.randrange(0, len(universe)))))
        now_keys = set(before)
        now_keys -= set(rng.sample(before, rng.randrange(0, len(before) + 1) // rng.choice((1, 3, 9))))
        now_keys |= set(rng.sample(universe, rng.randrange(0, 6)))
        ids = [f"id {k}" for k in before]
        signatures = b"".join(_signature(n + 1) for n in range(len(before)))
        at = {key: n for n, key in enumerate(before)}
        now: dict[EdgeKey, object] = dict.fromkeys(sorted(now_keys, reverse=True))
        out = splice(before, ids, signatures, at, now)
        expected = sorted(now_keys)
        assert out.keys == expected
        assert out.ids == [f"id {k}" if k in at else None for k in expected]
        assert out.added == [n for n, k in enumerate(expected) if k not in at]
        assert out.gone == [n for n, k in enumerate(before) if k not in now_keys]
        assert bytes(out.signatures) == b"".join(
            _signature(at[k] + 1) if k in at else UNSIGNED for k in expected
        )
        if now_keys == set(before):
            assert out.keys is before


def test_the_files_index_names_the_edges_a_change_to_each_file_touches() -> None:
    """For every file of a real program, the index's edges are those ``edge_delta.touches``
    finds reading a span in it (caller, callees, other sites, spans read on the way)."""
    files = V1  # the carry tests' four files: edges within a file, across files, through a re-export
    graph = call_graph(program_from_files(files))
    index = touching(graph.edges)
    assert set(index) <= set(files)
    for path in files:
        expected = {k for k, e in graph.edges.items() if touches(e, frozenset({path}), {})}
        assert set(index.get(path, ())) == expected, path
        assert len(index.get(path, ())) == len(expected), path
    assert len(index["pkg/__init__.py"]) > 0  # the re-export is read on the way to ``helper``


def test_ids_without_the_dropped_ones_stay_sorted() -> None:
    """``without`` against a set difference, for random sorted ids and dropped subsets (none, one,
    neighbours, the ends, all); an id it does not hold is refused, never skipped."""
    rng = random.Random(44)
    for _ in range(300):
        ordered = sorted({f"{rng.randrange(10**6):064x}" for _ in range(rng.randrange(0, 80))})
        dropped = rng.sample(ordered, rng.randrange(0, len(ordered) + 1) // rng.choice((1, 4, 20)))
        assert edge_delta.without(ordered, dropped) == tuple(sorted(set(ordered) - set(dropped)))
    assert edge_delta.without(["a", "b"], []) == ("a", "b")
    with pytest.raises(ValueError, match="c is not among"):
        edge_delta.without(["a", "b"], ["c"])
