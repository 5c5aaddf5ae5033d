"""Per-file answers (``core.per_file``) are remembered only for the very same file: the same path,
module, spans and facts objects under the same module map, as the loader shares them between a
watch's commits. The import edges, put together from per-file answers, are the ones the whole
commit's edges give, whether remembered or not, and files that share a module name (which no
module map makes) are still put together edge by edge.
"""

from __future__ import annotations

from dataclasses import replace

from kb_assets.core import per_file
from kb_assets.core.extractors.imports import EXTRACTOR_ID, ImportsExtractor, _edges_of, _extraction
from kb_assets.core.models import JSON
from kb_assets.core.modules import map_modules
from kb_assets.core.per_file import PerFile
from kb_assets.core.program import Program, SourceFile
from kb_gates import gates
from tests.programs import program_from_files

FILES = {
    "pkg/__init__.py": "from pkg.models import Order\nfrom . import util\n",
    "pkg/models.py": "import os\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.util\n",
    "pkg/util.py": "import json, os.path\nfrom .models import Order\nfrom .missing import nothing\n",
    "app.py": "import pkg\nimport importlib\nimportlib.import_module('pkg.util')\n",
    "pkg/Zeta.py": "import os\n",  # before pkg/__init__.py by path, after module pkg by name
}

made: list[str] = []


def _count(source: SourceFile, facts: JSON, program: Program) -> str:
    made.append(source.path)
    return f"{source.path}@{source.blob_id[:8]}"


counted: PerFile[str] = PerFile(EXTRACTOR_ID, _count)


def _shared(program: Program, **changes: str) -> Program:
    """The next commit as the loader makes it: new ``SourceFile`` objects over the same spans and
    facts, but for the files in ``changes`` (their new text, parsed again)."""
    files = {path: replace(source) for path, source in program.files.items()}
    if changes:
        edited = program_from_files({**FILES, **changes})
        files.update({path: edited.files[path] for path in changes})
    return replace(program, files=files)


def test_an_answer_is_made_again_only_for_a_file_that_is_not_the_same() -> None:
    made.clear()
    first = program_from_files(FILES)
    answers = counted(first)
    assert sorted(made) == sorted(answers) == sorted(FILES)
    made.clear()
    assert counted(_shared(first)) == answers
    assert made == []
    counted(_shared(first, **{"pkg/util.py": "import os\n"}))
    assert made == ["pkg/util.py"]
    made.clear()
    counted(program_from_files(FILES))  # decoded again: other facts objects
    assert sorted(made) == sorted(FILES)


def test_a_new_module_map_makes_every_answer_again() -> None:
    first = program_from_files(FILES)
    counted(first)
    made.clear()
    paths = [*FILES, "pkg/extra.py"]
    moved = replace(_shared(first), module_map=map_modules(paths))
    counted(moved)
    assert sorted(made) == sorted(FILES)


def test_remember_makes_every_kind_of_answer() -> None:
    program = program_from_files(FILES)
    made.clear()
    per_file.remember(program)
    assert sorted(made) == sorted(FILES)
    made.clear()
    counted(_shared(program))
    assert made == []


def test_import_edges_put_together_per_file_are_the_commits_edges() -> None:
    """Fresh, remembered and after an edit: the drafts and gaps of the whole commit's edges."""
    first = program_from_files(FILES)
    edited = _shared(first, **{"pkg/util.py": "import json\nfrom pkg import models\n"})
    for program in (first, _shared(first), edited, _shared(edited)):
        whole = _extraction(_edges_of(list(program.facts(EXTRACTOR_ID)), program))
        found = ImportsExtractor().resolve(program)
        assert list(found.drafts) == list(whole.drafts)
        assert found.gaps == whole.gaps
        assert found.drafts
        assert "dynamic_import" in {g.reason for g in found.gaps}
    assert "unresolved_import" in {g.reason for g in ImportsExtractor().resolve(first).gaps}


def test_files_sharing_a_module_name_are_put_together_edge_by_edge() -> None:
    """Two files named one module (a hand-made program): one edge per imported module, grounded
    on both files' statements, as when every file is put together edge by edge."""
    program = program_from_files({"a.py": "import os\n", "b.py": "import os\nimport json\n"})
    twins = {path: replace(source, module="same") for path, source in program.files.items()}
    shared = Program(sha=program.sha, files=twins, module_map=program.module_map)
    found = ImportsExtractor().resolve(shared)
    assert [d.logical_key for d in found.drafts] == ["import:same->json", "import:same->os"]
    os_edge = found.drafts[1]
    assert {g.path for g in os_edge.grounding} == {"a.py", "b.py"}


def test_the_reproducibility_gate_resolves_a_copy_answered_afresh() -> None:
    """The copy of a program the reproducibility gate resolves (``gates._copy_of``) has facts
    objects of its own: nothing remembered per file is reused for it, so the gate proves what
    the extractors compute, not what was remembered."""
    program = program_from_files(FILES)
    first = counted(program)
    made.clear()
    assert counted(gates._copy_of(program)) == first
    assert sorted(made) == sorted(FILES)
