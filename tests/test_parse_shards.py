"""``kb parse --shard K/N``: a commit's parse split over processes sharing one store.

The shards' blob sets are disjoint and cover the commit; what they cache is what the index's own
parse caches, row for row (compared with an index of the same commit in another database); the
``kb index`` that follows parses nothing and publishes the same records; two shards run at once
against one store; a bad ``--shard`` is refused with exit 2 before the store is touched.
"""

from __future__ import annotations

import hashlib
import re
import threading
from pathlib import Path

import pytest
import sqlalchemy as sa

from kb_assets.core.errors import BadInputError
from kb_assets.indexing.preparse import Shard
from kb_resources.store.schema import blob_span, code_span, parsed_blob
from tests.gitfixtures import commit_tree, init_repo
from tests.kbfixtures import CliResult, KbEnv
from tests.storefixtures import table_dump

SHARED = "def shared(x):\n    return x + 1\n"

FILES = {
    "pkg/__init__.py": "",
    "pkg/sub/__init__.py": "",  # the same (empty) blob as pkg/__init__.py
    "pkg/copy_a.py": SHARED,
    "pkg/copy_b.py": SHARED,  # the same blob at a second path
    "pkg/orders.py": (
        "from pkg.copy_a import shared\n\n\nclass Order:\n    def total(self, n):\n        return shared(n)\n"
    ),
    "pkg/broken.py": "def broken(:\n    pass\n",  # a parse gap, cached with the blob
    **{
        f"pkg/m{i}.py": f"from pkg.orders import Order\n\n\ndef f{i}():\n    return Order().total({i})\n"
        for i in range(8)
    },
}
DISTINCT_BLOBS = len(set(FILES.values()))

SUMMARY = re.compile(
    r"parsed (\w{12}) shard (\d+)/(\d+): (\d+) of (\d+) blobs \((\d+) parsed, (\d+) already cached\)"
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A one-commit repository with copied files (shared blobs) and a file that does not parse."""
    path = init_repo(tmp_path / "repo")
    commit_tree(path, FILES, "first")
    return path


def _summary(result: CliResult) -> tuple[int, int, int, int]:
    """(in shard, blobs, parsed, already cached) from ``kb parse``'s line."""
    assert result.code == 0, result.stderr
    found = SUMMARY.fullmatch(result.stdout.strip())
    assert found is not None, result.stdout
    return int(found[4]), int(found[5]), int(found[6]), int(found[7])


def _blob_cache(db_url: str) -> list[list[tuple[object, ...]]]:
    """Every row of the blob cache's tables."""
    engine = sa.create_engine(db_url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.connect() as conn:
            return [table_dump(conn, table) for table in (parsed_blob, blob_span, code_span)]
    finally:
        engine.dispose()


def test_a_shard_is_k_of_n_counted_from_zero() -> None:
    assert Shard.parse("0/1") == Shard(0, 1)
    assert Shard.parse(" 3/4 ") == Shard(3, 4)
    assert str(Shard.parse("2/5")) == "2/5"
    for bad, says in [
        ("", "takes K/N"),
        ("x", "takes K/N"),
        ("1", "takes K/N"),
        ("-1/2", "takes K/N"),
        ("1/2/3", "takes K/N"),
        ("2/2", "below N (0 to 1)"),
        ("0/0", "at least 1"),
    ]:
        with pytest.raises(BadInputError, match=re.escape(says)):
            Shard.parse(bad)


def test_the_shards_of_a_count_split_every_blob_once() -> None:
    ids = [hashlib.sha1(str(i).encode()).hexdigest() for i in range(2000)]
    for count in (1, 2, 3, 8):
        owners = [[k for k in range(count) if Shard(k, count).holds(b)] for b in ids]
        assert all(len(owner) == 1 for owner in owners)
        sizes = [sum(1 for owner in owners if owner == [k]) for k in range(count)]
        assert min(sizes) > 2000 / count * 0.8  # ids are hashes: the shards come out even


def test_shards_cache_what_the_index_would_and_the_index_parses_nothing(
    kb_env: KbEnv, other_env: KbEnv, repo: Path
) -> None:
    first, second = kb_env.kb("parse", repo, "--shard", "0/2"), kb_env.kb("parse", repo, "--shard", "1/2")
    (in_first, blobs, parsed_first, cached_first), (in_second, _, parsed_second, _) = (
        _summary(first),
        _summary(second),
    )
    assert blobs == DISTINCT_BLOBS
    assert in_first + in_second == DISTINCT_BLOBS
    assert min(in_first, in_second) > 0
    assert (parsed_first, cached_first, parsed_second) == (in_first, 0, in_second)
    assert _summary(kb_env.kb("parse", repo, "--shard", "0/2"))[2:] == (0, in_first)  # nothing twice

    indexed = kb_env.kb("index", repo)
    assert indexed.code == 0, indexed.stderr
    assert f"{len(FILES)} files (0 parsed, {len(FILES)} reused)" in indexed.stdout

    plain = other_env.kb("index", repo)  # the same commit, parsed by the index itself
    assert plain.code == 0, plain.stderr
    assert f"({len(FILES)} parsed, 0 reused)" in plain.stdout
    assert _blob_cache(kb_env.db_url) == _blob_cache(other_env.db_url)
    assert indexed.stdout == plain.stdout.replace(
        f"({len(FILES)} parsed, 0 reused)", f"(0 parsed, {len(FILES)} reused)"
    )
    assert "broken.py" in indexed.stdout  # the parse gap, from the shard's cached blob
    exported, expected = kb_env.kb("export", repo), other_env.kb("export", repo)
    assert exported.code == 0
    assert exported.stdout == expected.stdout
    assert exported.jsonl()


def test_two_shards_parse_at_once_into_one_store(kb_env: KbEnv, repo: Path) -> None:
    assert kb_env.kb("migrate", repo).code == 0
    results: dict[str, CliResult] = {}

    def shard(spec: str) -> None:
        results[spec] = kb_env.kb_process("parse", repo, "--shard", spec)

    threads = [threading.Thread(target=shard, args=(spec,)) for spec in ("0/2", "1/2")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    counts = [_summary(results[spec]) for spec in ("0/2", "1/2")]
    assert sum(c[0] for c in counts) == DISTINCT_BLOBS
    assert [c[2] for c in counts] == [c[0] for c in counts]
    indexed = kb_env.kb("index", repo)
    assert indexed.code == 0, indexed.stderr
    assert f"(0 parsed, {len(FILES)} reused)" in indexed.stdout


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--shard", "2/2"), "--shard 2/2: K counts from 0"),
        (("--shard", "two"), "--shard takes K/N"),
        (("--sha", "no-such-branch"), "no-such-branch"),
    ],
)
def test_bad_input_exits_2_with_one_line(kb_env: KbEnv, repo: Path, args: tuple[str, ...], says: str) -> None:
    result = kb_env.kb_process("parse", repo, *args)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.code == 2, result.stderr
    assert len(lines) == 1, result.stderr
    assert says in lines[0]
    assert result.stdout == ""
