"""The commit's occurrences as grounding validation asks for them (``grounding.Occurrences``): the
same answers as the set of every (path, span id) pair, gathered a file at a time."""

from __future__ import annotations

import pytest

from kb_assets.core.errors import GroundingError
from kb_assets.core.extractors.base import Draft
from kb_assets.core.grounding import check_grounding, known_occurrences
from kb_assets.core.models import Grounding
from tests.programs import program_from_files

FILES = {
    "pkg/a.py": "def f():\n    return 1\n\n\nclass C:\n    def m(self):\n        return f()\n",
    "pkg/b.py": "from pkg.a import f\n\n\ndef g():\n    return f()\n",
    "pkg/same.py": "def f():\n    return 1\n",  # the same span as a.py's ``f``, in another file
}


def test_every_pair_of_the_commit_occurs_and_nothing_else() -> None:
    program = program_from_files(FILES)
    everything = {(f.path, s.span_id) for f in program.files.values() for s in f.spans}
    occurrences = known_occurrences(program)
    assert len(everything) > 5
    assert all(pair in occurrences for pair in sorted(everything))
    spans = sorted({span for _, span in everything})
    paths = [*sorted(program.files), "pkg/gone.py"]
    for path in paths:
        for span in spans:
            assert ((path, span) in occurrences) == ((path, span) in everything), (path, span)
    assert ("pkg/a.py",) not in occurrences
    assert "pkg/a.py" not in occurrences
    assert known_occurrences(program) is occurrences  # one per program, shared by its extractors


def test_a_draft_grounded_in_another_file_is_refused() -> None:
    """A span id that occurs in the commit, named at a file where it does not occur, grounds
    nothing: the check asks for the pair, not the span."""
    program = program_from_files(FILES)
    b_span = program.files["pkg/b.py"].spans[0].span_id
    placed = Draft("call_edge", "call:x", {}, (Grounding(b_span, "pkg/b.py", "caller"),))
    misplaced = Draft("call_edge", "call:x", {}, (Grounding(b_span, "pkg/a.py", "caller"),))
    occurrences = known_occurrences(program)
    assert check_grounding(placed, occurrences) == placed.grounding
    with pytest.raises(GroundingError, match=r"does not occur in pkg/a\.py"):
        check_grounding(misplaced, occurrences)
