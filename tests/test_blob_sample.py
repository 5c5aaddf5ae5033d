"""``blob_cache_reproduces`` finds a parse cache that a fresh parse does not reproduce: spans or
facts changed, a blob missing; a sound cache passes (``kb_gates.blob_sample``)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import sqlalchemy as sa

from kb_assets.core.blobs import analyze_blob, encode_facts
from kb_assets.core.extractors.registry import COLLECTORS, EXTRACTORS, parser_version
from kb_assets.core.spans import ParseLimits
from kb_gates.blob_sample import Sampled, blob_mismatches
from kb_gates.history import cache_mismatches
from kb_resources.git.repo import GitRepo
from kb_resources.settings import load_settings
from kb_resources.store.engine import open_store
from tests.gitfixtures import commit_tree, init_repo
from tests.kbfixtures import KbEnv

SOURCE = b"import os\n\n\ndef f():\n    return os.sep\n\n\nclass C:\n    def m(self):\n        return f()\n"


def test_each_way_a_cache_can_be_wrong_is_named() -> None:
    """Against a fresh parse: the same spans and facts pass; other spans, other facts and no
    cache entry are each reported, in the sample's order."""
    fresh = analyze_blob("b" * 40, SOURCE, EXTRACTORS, ParseLimits(), COLLECTORS)
    facts = encode_facts(fresh.facts)
    moved = (replace(fresh.spans[0], end_line=fresh.spans[0].end_line + 1), *fresh.spans[1:])
    other = encode_facts({**fresh.facts, "calls": {"scopes": []}})
    sampled: list[Sampled] = [
        ("a" * 40, SOURCE, (fresh.spans, facts)),
        ("b" * 40, SOURCE, (moved, facts)),
        ("c" * 40, SOURCE, (fresh.spans, other)),
        ("d" * 40, SOURCE, None),
    ]
    assert blob_mismatches(sampled, ParseLimits()) == [
        f"{'b' * 12}: cached spans differ from a fresh parse",
        f"{'c' * 12}: cached facts differ from a fresh parse",
        f"{'d' * 12}: not in the cache",
    ]


def test_a_tampered_cache_fails_the_check_of_an_indexed_commit(kb_env: KbEnv, tmp_path: Path) -> None:
    """Index a commit, then change one cached blob's facts in the store: the check reports that
    blob, and only it."""
    repo = init_repo(tmp_path / "r")
    sha = commit_tree(
        repo, {"pkg/__init__.py": "", "pkg/m.py": SOURCE.decode(), "pkg/n.py": "X = 1\n"}, "first"
    )
    assert kb_env.kb("index", repo, "--no-verify").code == 0
    git = GitRepo.open(repo)
    blob = next(f.blob_id for f in git.python_files(sha) if f.path == "pkg/m.py")
    with open_store(load_settings(kb_env.environ), git.key()) as store:
        assert cache_mismatches(git, store.engine, sha, sample=-1, limits=ParseLimits()) == []
        with store.engine.begin() as conn:
            conn.execute(
                sa.text(
                    "UPDATE parsed_blob SET facts = :facts WHERE blob_id = :blob AND parser_version = :pv"
                ),
                {"facts": encode_facts({"calls": {"scopes": []}}), "blob": blob, "pv": parser_version()},
            )
        found = cache_mismatches(git, store.engine, sha, sample=-1, limits=ParseLimits())
    assert found == [f"{blob[:12]}: cached facts differ from a fresh parse"]
