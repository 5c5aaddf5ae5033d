"""One commit seen as a program: its files, their spans and facts, and its module map.

Extractors resolve against this view only, so the same ``Program`` always yields the same
knowledge, whether its facts were freshly parsed or reused from earlier commits.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from kb_assets.core.models import JSON, Grounding, Span
from kb_assets.core.modules import ModuleMap

CONFIG_FILES: tuple[str, ...] = (".kb/sinks.yaml",)
"""Non-Python files of a commit that extractors read (``Program.config``)."""


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A parsed `.py` file of the commit (files with gaps that prevented parsing are absent)."""

    path: str
    blob_id: str
    module: str | None
    is_package: bool
    spans: tuple[Span, ...]
    facts: Mapping[str, JSON]

    def ground(self, ordinal: int, role: str) -> Grounding:
        """A grounding edge on this file's span number ``ordinal``."""
        return Grounding(span_id=self.spans[ordinal].span_id, path=self.path, role=role)


@dataclass(frozen=True, slots=True)
class Program:
    """The commit-wide view every extractor's ``resolve`` receives."""

    sha: str
    files: Mapping[str, SourceFile]
    module_map: ModuleMap
    config: Mapping[str, JSON] = field(default_factory=dict)
    """Text of the commit's ``CONFIG_FILES`` that exist, by path (e.g. ``.kb/sinks.yaml``)."""

    def by_module(self, module: str) -> SourceFile | None:
        """The parsed file that defines ``module``, if it is first-party and parsed."""
        path = self.module_map.paths.get(module)
        return self.files.get(path) if path is not None else None

    def modules(self) -> Iterator[SourceFile]:
        """Parsed files that have a module name, in path order (deterministic)."""
        for path in sorted(self.files):
            source = self.files[path]
            if source.module is not None:
                yield source

    def facts(self, extractor_id: str) -> Iterator[tuple[SourceFile, JSON]]:
        """Each module file with its facts from ``extractor_id``, in path order."""
        for source in self.modules():
            value = source.facts.get(extractor_id)
            if value is not None:
                yield source, value
