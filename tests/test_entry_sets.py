"""A commit's entries are stored as shared, content-addressed sets (``entry_sets``, migration 0006):
the rules are deterministic, a small change writes only the buckets it touches, publishing copies
parts, and the migration's SQL names the same sets as the Python rules."""

from __future__ import annotations

import hashlib
import random
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command

from kb_assets.core.models import Artifact, Grounding
from kb_resources.store import commit_reads, reads, revision, writes
from kb_resources.store import entry_sets as entry_sets_module
from kb_resources.store.engine import Store
from kb_resources.store.entry_sets import NAMED_SETS, entry_sets, prefix_width
from kb_resources.store.schema import entry_set, entry_set_member, snapshot_entry, snapshot_part, staged_part
from tests.storefixtures import PARSER_VERSION, grounded, seed_commit, sha_of, span

ALPHA = span("alpha", 1, 3)


def _artifacts(count: int, tag: str = "") -> list[Artifact]:
    return [grounded(f"call:{tag}{i}", [Grounding(ALPHA.span_id, "m.py", "caller")]) for i in range(count)]


def _ids(items: list[Artifact]) -> list[str]:
    return [a.artifact_id for a in items]


def _seed(store: Store, shas: list[str], artifacts: list[Artifact]) -> None:
    with store.engine.begin() as conn:
        for sha in shas:
            seed_commit(conn, sha, {"m.py": [ALPHA]})
        writes.insert_artifacts(conn, artifacts)


def _members(store: Store) -> int:
    with store.engine.connect() as conn:
        return int(conn.scalar(sa.select(sa.func.count()).select_from(entry_set_member)) or 0)


def _publish(conn: sa.Connection, sha: str, extractor_ids: list[str] | None = None) -> int:
    return writes.publish_snapshot(
        conn,
        sha,
        mode="full",
        base_sha=None,
        stats={},
        parser_version=PARSER_VERSION,
        extractor_ids=extractor_ids,
    )


def test_the_rules_are_deterministic_and_partition_the_ids() -> None:
    """Buckets cover every id once, in prefix order; the set id ignores order and repeats and is
    the documented hash; the width grows as the square root of the size."""
    ids = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(5000)]
    shuffled = random.Random(7).sample(ids, len(ids))
    sets = entry_sets([*shuffled, *ids[:10]])
    assert sets == entry_sets(ids)
    assert [aid for s in sets for aid in s.members] == sorted(ids)
    assert all(len(s.prefix) == prefix_width(5000) == 2 for s in sets)
    assert [s.prefix for s in sets] == sorted({aid[:2] for aid in ids})
    first = sets[0]
    text = "entry-set:1\n" + "\n".join(sorted(first.members))
    assert first.set_id == hashlib.sha256(text.encode()).hexdigest()
    assert [prefix_width(n) for n in (1, 15, 16, 4095, 4096, 1_048_575, 1_048_576)] == [0, 0, 1, 1, 2, 2, 3]


def test_a_set_cut_again_is_named_from_memory_for_a_few_commits_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """A set some recent cut made is named without hashing its members again (a watched commit cuts
    nearly every set as the commit before did); once ``NAMED_SETS`` other sets were cut since, it
    is forgotten and hashed again. Every name is the documented hash."""
    hashed: list[int] = []
    real = hashlib.sha256

    def counted(data: bytes = b"") -> Any:
        hashed.append(1)
        return real(data)

    entry_sets_module._set_id.cache_clear()
    monkeypatch.setattr(hashlib, "sha256", counted)  # what ``_set_id`` calls
    ids = [real(str(i).encode()).hexdigest() for i in range(5000)]
    first = entry_sets(ids)
    assert len(hashed) == len(first) > 1
    changed = [*ids[1:], real(b"new").hexdigest()]
    again = entry_sets(changed)
    assert len(hashed) == len(first) + 2  # the bucket that lost an id, the one that gained one
    for cut in (first, again):
        for s in cut:
            text = "entry-set:1\n" + "\n".join(s.members)
            assert s.set_id == real(text.encode()).hexdigest()
    for n in range(NAMED_SETS):
        entry_sets([real(f"other {n}".encode()).hexdigest()])
    hashed.clear()
    assert entry_sets(ids) == first
    assert len(hashed) == len(first)
    entry_sets_module._set_id.cache_clear()


def test_a_small_change_writes_only_its_buckets(store: Store) -> None:
    """Two commits whose staged ids differ by one share every other bucket: the second writes the
    members of one set, and the views expand each commit's parts to exactly its ids."""
    items = _artifacts(300)
    extra = _artifacts(1, tag="extra")
    first, second = sha_of("first"), sha_of("second")
    _seed(store, [first, second], [*items, *extra])
    with store.engine.begin() as conn:
        assert writes.replace_staged(conn, first, "test", _ids(items)) == 300
    before = _members(store)
    assert before == 300
    changed = [*_ids(items)[1:], *_ids(extra)]
    with store.engine.begin() as conn:
        writes.replace_staged(conn, second, "test", changed)
    sets = {s.prefix: s for s in entry_sets(changed)}
    touched = {_ids(items)[0][:1], _ids(extra)[0][:1]}
    assert _members(store) - before == sum(len(sets[p].members) for p in touched if p in sets)
    with store.engine.connect() as conn:
        assert reads.staged_artifact_ids(conn, first, "test") == sorted(_ids(items))
        assert reads.staged_artifact_ids(conn, second, "test") == sorted(changed)
        assert commit_reads.staged_count(conn, second, "test") == 300


def test_publishing_copies_parts_and_passes_add_their_own(store: Store) -> None:
    """A publish copies the staged parts of the chosen extractors; ``publish_entries`` replaces one
    extractor's parts only; restaging the same ids writes no new set."""
    items, described = _artifacts(40), _artifacts(3, tag="described")
    sha = sha_of("published")
    _seed(store, [sha], [*items, *described])
    with store.engine.begin() as conn:
        writes.replace_staged(conn, sha, "calls", _ids(items))
        writes.replace_staged(conn, sha, "gone", _ids(described))
        published = _publish(conn, sha, ["calls"])
    assert published == 40
    with store.engine.begin() as conn:
        assert writes.publish_entries(conn, sha, "gone") == 3
        rows = conn.execute(sa.select(snapshot_entry.c.extractor_id, snapshot_entry.c.artifact_id)).all()
        parts = conn.execute(sa.select(snapshot_part.c.extractor_id, snapshot_part.c.set_id)).all()
        staged = conn.execute(sa.select(staged_part.c.extractor_id, staged_part.c.set_id)).all()
    assert sorted(rows) == sorted(
        [("calls", i) for i in _ids(items)] + [("gone", i) for i in _ids(described)]
    )
    assert sorted(parts) == sorted(staged)
    sets = _members(store)
    with store.engine.begin() as conn:
        writes.replace_staged(conn, sha, "calls", reversed(_ids(items)))
    assert _members(store) == sets


def test_the_migration_names_the_sets_the_rules_name(store: Store) -> None:
    """Downgraded to one row per entry and upgraded again, the store holds the very parts and sets
    ``replace_staged`` wrote: migration 0006's SQL and ``entry_sets`` agree, on each side of the
    width's two steps (15/16 ids: 0/1 hex digits; 4,095/4,096: 1/2)."""
    sizes = (1, 15, 16, 300, 4095, 4096)
    commits = [sha_of(f"migrated{n}") for n in range(len(sizes))]
    items = _artifacts(max(sizes))
    _seed(store, commits, items)
    with store.engine.begin() as conn:
        for sha, size in zip(commits, sizes, strict=True):
            writes.replace_staged(conn, sha, "test", _ids(items)[:size])  # the artifacts' extractor
            _publish(conn, sha)

    def layout() -> tuple[list[tuple[object, ...]], ...]:
        """This test's parts and the sets they name (other tests share the store)."""
        tables = []
        with store.engine.connect() as conn:
            for part in (staged_part, snapshot_part):
                tables.append(
                    sorted(tuple(r) for r in conn.execute(sa.select(part).where(part.c.sha.in_(commits))))
                )
            named = sa.select(staged_part.c.set_id).where(staged_part.c.sha.in_(commits))
            sets = conn.execute(sa.select(entry_set).where(entry_set.c.set_id.in_(named)))
            tables.append(sorted(tuple(r) for r in sets))
        return tuple(tables)

    written = layout()
    assert len(written[0]) == sum(len(entry_sets(_ids(items)[:size])) for size in sizes)
    assert {len(str(prefix)) for _, _, prefix, _ in written[0]} == {0, 1, 2}
    with store.engine.begin() as conn:
        command.downgrade(revision.alembic_config(conn), "0005")
        assert conn.scalar(sa.text("SELECT count(*) FROM snapshot_entry")) == sum(sizes)
    with store.engine.begin() as conn:
        command.upgrade(revision.alembic_config(conn), "head")
    assert layout() == written
    with store.engine.connect() as conn:
        named = [str(set_id) for set_id, _ in written[2]]
        counted = sa.select(sa.func.count()).where(entry_set_member.c.set_id.in_(named))
        assert conn.scalar(counted) == sum(int(str(size)) for _, size in written[2])


def test_the_snapshot_digest_follows_the_ids(store: Store) -> None:
    """Two commits publishing the same ids per extractor have one digest; one id more or less, or
    the same ids under another extractor, changes it."""
    items = _artifacts(50, tag="digest")
    shas = [sha_of(f"digest{n}") for n in range(4)]
    _seed(store, shas, items)
    staged = [("test", _ids(items)), ("test", list(reversed(_ids(items)))), ("test", _ids(items)[1:])]
    with store.engine.begin() as conn:
        for sha, (extractor_id, ids) in zip(shas, [*staged, ("other", _ids(items))], strict=True):
            writes.replace_staged(conn, sha, extractor_id, ids)
            _publish(conn, sha, [extractor_id])
        digests = [reads.snapshot_digest(conn, sha) for sha in shas]
    assert digests[0] == digests[1]
    assert len(set(digests)) == 3


def test_snapshot_difference_is_the_difference_of_the_ids(store: Store) -> None:
    """Read set by set, the ids only one snapshot holds and the count both hold are those of the
    id sets themselves: changed buckets, a bucket changed on both sides, an extractor on one side."""
    items = _artifacts(400, tag="difference")
    ids = _ids(items)
    base, head = sha_of("difference-base"), sha_of("difference-head")
    _seed(store, [base, head], items)
    before = {"calls": ids[:300], "gone": ids[350:]}
    after = {"calls": [*ids[5:300], *ids[300:320]], "new": ids[320:350]}
    with store.engine.begin() as conn:
        for sha, staged in ((base, before), (head, after)):
            for extractor_id, chosen in staged.items():
                writes.replace_staged(conn, sha, extractor_id, chosen)
            _publish(conn, sha)
        difference = reads.snapshot_difference(conn, base, head)
    old = {i for chosen in before.values() for i in chosen}
    new = {i for chosen in after.values() for i in chosen}
    assert difference == (old - new, new - old, len(old & new))
