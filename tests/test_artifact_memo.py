"""A watch's artifact memo (``core.artifact_memo``, ``indexing.artifact_memos``) gives a draft the
id it would have been given anyway, and nothing else: only a draft equal to a remembered one
(grounding, confidence and payload, with ``True``, ``1`` and ``1.0`` told apart) is recalled; a
recalled draft's grounding is still checked against the commit; a build's lesson names what it
learned and what it no longer drafts. In a store, a second build of the same drafts stores and
looks up nothing, and stages the ids a build without the memo gives.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from kb_assets.core.artifact_memo import ArtifactMemo, Known
from kb_assets.core.errors import GroundingError
from kb_assets.core.extractors.base import Draft
from kb_assets.core.extractors.imports import ImportsExtractor
from kb_assets.core.grounding import ArtifactBuilder
from kb_assets.core.ids import artifact_id
from kb_assets.core.json_text import canonical_json
from kb_assets.core.models import JSON, Grounding, Method
from kb_assets.core.program import Program
from kb_assets.core.spans import ParseLimits
from kb_assets.indexing import artifact_memos
from kb_assets.indexing.extract import _stored, run_extractor
from kb_assets.indexing.load import forget_programs, load_program
from kb_resources.git.repo import GitRepo
from kb_resources.settings import load_settings
from kb_resources.store.engine import open_store
from tests.gitfixtures import build_repo
from tests.kbfixtures import KbEnv
from tests.programs import program_from_files

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

FILES = {
    "pkg/__init__.py": "from pkg.models import Order\n",
    "pkg/models.py": "import os\n\n\nclass Order:\n    def total(self):\n        return os.sep\n",
}


def _builder(program: Program, memo: ArtifactMemo | None) -> ArtifactBuilder:
    return ArtifactBuilder("probe", "1", program, Method.DETERMINISTIC, memo=memo)


def _draft(program: Program, payload: dict[str, JSON], *, confidence: float = 1.0) -> Draft:
    """A draft grounded on the first two spans of ``pkg/models.py``, in reverse order."""
    source = program.files["pkg/models.py"]
    grounding = (source.ground(1, "definition"), source.ground(0, "definition"))
    return Draft("probe", "probe:order", payload, grounding, confidence)


def _remembering(program: Program, draft: Draft) -> tuple[ArtifactMemo, str]:
    """A memo that learned ``draft`` from a build, and the id that build gave it."""
    learning = ArtifactMemo({})
    art, _ = _builder(program, learning)(draft)
    return ArtifactMemo(learning.lesson().learned), art.artifact_id


def test_an_equal_draft_is_recalled_with_the_id_a_build_gives_it() -> None:
    """The recalled id and grounding are those of a build without the memo."""
    program = program_from_files(FILES)
    draft = _draft(program, {"name": "Order", "fields": [1, 2.5, True, None]})
    memo, first = _remembering(program, draft)
    plain, _ = _builder(program, None)(draft)
    again = _draft(program, {"name": "Order", "fields": [1, 2.5, True, None]})
    recalled, _ = _builder(program, memo)(again)
    assert first == plain.artifact_id == recalled.artifact_id
    assert recalled.grounding == plain.grounding
    assert memo.recalled == {first}
    assert memo.lesson().learned == {}


def test_a_built_artifact_carries_the_payload_text_its_id_was_made_from() -> None:
    """A build hands the store the payload's canonical JSON, the very text hashed into the id (the
    id is what ``ids.artifact_id`` gives, which encodes the payload itself); a recalled draft,
    whose id was not made now, carries none, and the text is no part of an artifact's equality."""
    program = program_from_files(FILES)
    payload: dict[str, JSON] = {"name": "Order", "fields": ["a", {"b": 1, "a": [2.5, None]}]}
    memo, _ = _remembering(program, _draft(program, payload))
    built, _ = _builder(program, None)(_draft(program, payload))
    assert built.payload_json == canonical_json(payload)
    assert built.artifact_id == artifact_id(
        logical_key="probe:order",
        extractor_id="probe",
        extractor_version="1",
        grounding=built.grounding,
        payload=payload,
    )
    recalled, _ = _builder(program, memo)(_draft(program, payload))
    assert recalled.payload_json is None
    assert recalled == built


@pytest.mark.parametrize(
    "changed",
    [
        {"payload": {"name": "Order", "fields": [True, 2.5, True, None]}},  # 1 -> True: == but not JSON
        {"payload": {"name": "Order", "fields": [1.0, 2.5, True, None]}},  # 1 -> 1.0
        {"payload": {"name": "Order", "fields": [1, 2.5, 1, None]}},  # True -> 1
        {"payload": {"name": "Order", "fields": [1, 2.5, True]}},
        {"confidence": 0.5},
        {"grounding": "reordered"},
    ],
)
def test_a_draft_that_differs_in_any_way_is_built_again(changed: dict[str, object]) -> None:
    """Payloads equal under ``==`` but not as JSON, another confidence, the same edges in another
    order (conservative: the id is the same): not recalled, and given the id a build gives."""
    program = program_from_files(FILES)
    draft = _draft(program, {"name": "Order", "fields": [1, 2.5, True, None]})
    memo, _ = _remembering(program, draft)
    payload = changed.get("payload", draft.payload)
    confidence = changed.get("confidence", draft.confidence)
    other = _draft(program, payload, confidence=confidence)  # type: ignore[arg-type]
    if "grounding" in changed:
        other = Draft(other.kind, other.logical_key, other.payload, other.grounding[::-1], other.confidence)
    built, _ = _builder(program, memo)(other)
    plain, _ = _builder(program, None)(other)
    assert built.artifact_id == plain.artifact_id
    assert built.confidence == other.confidence
    assert memo.recalled == set()
    assert set(memo.lesson().learned) == {("probe", "probe:order")}


def test_a_recalled_draft_is_grounded_in_the_commit_all_the_same() -> None:
    """A remembered draft grounded on a span the next commit no longer has is refused, as it is
    without the memo: the invariant is checked on every commit."""
    before = program_from_files(FILES)
    draft = _draft(before, {"name": "Order"})
    memo, _ = _remembering(before, draft)
    after = program_from_files({**FILES, "pkg/models.py": "import sys\n"})
    with pytest.raises(GroundingError, match="does not occur"):
        _builder(after, memo)(draft)
    with pytest.raises(GroundingError, match="does not occur"):
        _builder(after, None)(draft)


def test_a_lesson_names_the_drafts_learned_and_the_keys_no_longer_drafted() -> None:
    program = program_from_files(FILES)
    source = program.files["pkg/models.py"]
    edge = (Grounding(source.spans[0].span_id, source.path, "definition"),)
    a, b, c = (Draft("probe", key, {"k": key}, edge) for key in ("a", "b", "c"))
    learning = ArtifactMemo({})
    builder = _builder(program, learning)
    ids = {d.logical_key: builder(d)[0].artifact_id for d in (a, b)}
    memo = ArtifactMemo(learning.lesson().learned)
    b_changed = Draft("probe", "b", {"k": "B"}, edge)
    for d in (b_changed, c):
        _builder(program, memo)(d)
    lesson = memo.lesson()
    assert set(lesson.learned) == {("probe", "b"), ("probe", "c")}
    assert lesson.learned[("probe", "b")].artifact_id != ids["b"]
    assert lesson.dropped == {("probe", "a")}
    assert all(isinstance(k, Known) for k in lesson.learned.values())


def _imports(version: str) -> ImportsExtractor:
    """The imports extractor under another version: its artifacts are new to the store."""
    extractor = ImportsExtractor()
    extractor.version = version
    return extractor


def test_a_second_build_in_a_watch_stores_and_looks_up_nothing(kb_env: KbEnv, tmp_path: Path) -> None:
    """Within ``remembering_artifacts``: a build learns every draft (stored), the next build of the
    same commit recalls them all without one statement, and both stage the ids of a build without
    the memo, in draft order. Outside, no memo is kept."""
    sha = build_repo(FIXTURES / "entities_oracle", tmp_path / "repo")[-1]
    assert kb_env.kb("index", tmp_path / "repo").code == 0
    repo = GitRepo.open(tmp_path / "repo")
    store = open_store(load_settings(kb_env.environ), repo.key())
    engine = store.engine
    statements: list[str] = []  # the store's look-ups and COPYs go through the driver's cursor
    sa.event.listen(engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
    sa.event.listen(engine, "begin", lambda _: statements.append("BEGIN"))
    try:
        forget_programs()
        program = load_program(repo, engine, sha, limits=ParseLimits(), workers=1)
        extractor = _imports("memo-a")
        expected = run_extractor(extractor, program).artifacts
        order = [d.logical_key for d in extractor.resolve(program).drafts]
        by_key = {a.logical_key: a.artifact_id for a in expected}
        assert len(expected) > 3
        assert artifact_memos.memo_for(engine.url, extractor) is None
        with artifact_memos.remembering_artifacts():
            first = _stored(engine, program, extractor)
            assert first.lesson is not None
            assert len(first.lesson.learned) == len(expected)
            assert first.loaded["artifact"] == len(expected)
            artifact_memos.apply(engine.url, extractor, first.lesson)
            statements.clear()
            second = _stored(engine, program, extractor)
            assert statements == []
            assert second.loaded == {}
            assert second.lesson is not None
            assert (second.lesson.learned, second.lesson.dropped) == ({}, frozenset())
        assert list(first.ids) == list(second.ids) == [by_key[k] for k in order]
        assert artifact_memos.memo_for(engine.url, extractor) is None
    finally:
        store.close()
