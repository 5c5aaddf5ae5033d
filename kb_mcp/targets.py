"""What a ``get_knowledge`` target means: a logical key, a file, a module or a dotted path.

Every reading that applies is used (a module is also the subject of its import edges), and each
matched unit keeps its best ``Tier``. Nothing matched is a mistake the model can fix, so the
error names close matches from the snapshot's keys, subjects, modules or files.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kb_assets.core.errors import BadInputError
from kb_mcp.errors import UnknownFileError, UnknownTargetError
from kb_mcp.paths import looks_like_path, normalize_path
from kb_mcp.ranking import Tier
from kb_mcp.snapshots import SnapshotIndex

MAX_TARGET_CHARS = 1000
MODULE_SPAN = "<module>"


@dataclass
class Resolution:
    """The matched units (artifact id -> best tier) and how the target was read."""

    tiers: dict[str, int] = field(default_factory=dict)
    readings: list[str] = field(default_factory=list)

    def add(self, ids: Iterable[str], tier: Tier) -> int:
        """Record ``ids`` at ``tier`` (keeping a better tier already found); how many were given."""
        return self.add_tiers((aid, tier) for aid in ids)

    def add_tiers(self, pairs: Iterable[tuple[str, Tier]]) -> int:
        """Record each (id, tier), keeping a better tier already found; how many were given."""
        n = 0
        for aid, tier in pairs:
            n += 1
            self.tiers[aid] = min(self.tiers.get(aid, tier), tier)
        return n


def _grounded(index: SnapshotIndex, path: str, qual: str, res: Resolution) -> None:
    """Units grounded in ``path``: on the symbol ``qual`` (or the module span) and inside it."""
    on, inside = [], []
    for unit in index.grounded.get(path, ()):
        fq = unit.fq_symbol_path
        if fq == (qual or MODULE_SPAN):
            on.append(unit.artifact_id)
        elif not qual or fq.startswith(qual + "."):
            inside.append(unit.artifact_id)
    where = f"{qual} in {path}" if qual else path
    if res.add(on, Tier.OWN) + res.add(inside, Tier.IN_SPAN):
        res.readings.append(f"units grounded on {where}")


def _about(index: SnapshotIndex, subject: str, owner: str) -> list[tuple[str, Tier]]:
    """Units naming ``subject``: owned when their primary subject is ``owner`` or inside it."""
    named = Tier.SUBJECT if subject == owner else Tier.UNDER
    inside = owner + "."
    return [
        (
            e.artifact_id,
            Tier.OWN if e.primary and (e.primary == owner or e.primary.startswith(inside)) else named,
        )
        for e in index.by_subject.get(subject, ())
    ]


def _as_file(index: SnapshotIndex, raw: str, res: Resolution) -> None:
    """Read the target as a file of the commit (an unknown file is an error right away)."""
    path = normalize_path(raw)
    if path not in index.files:
        raise UnknownFileError(path, index.sha, close_paths(path, index.files))
    module = index.files[path]
    res.readings.append(f"file {path}" + (f" (module {module})" if module else ""))
    if module and res.add_tiers(_about(index, module, module)):
        res.readings.append(f"units about module {module}")
    _grounded(index, path, "", res)


def _as_dotted(index: SnapshotIndex, target: str, res: Resolution) -> None:
    """Read the target as a dotted path: subject of units, symbol of a module, parent of subjects."""
    if res.add_tiers(_about(index, target, target)):
        res.readings.append(f"units about {target}")
    located = index.module_of(target)
    if located is not None:
        module, qual = located
        _grounded(index, index.modules[module], qual, res)
    under = [pair for s in index.subjects_under(target) for pair in _about(index, s, target)]
    if res.add_tiers(under):
        res.readings.append(f"units about members of {target}")


def close_paths(path: str, files: Mapping[str, str | None]) -> list[str]:
    """Up to five files of the commit that look like ``path`` (files of the same name first)."""
    name = path.rsplit("/", 1)[-1]
    same_name = sorted(p for p in files if p.rsplit("/", 1)[-1] == name)
    return same_name[:5] or difflib.get_close_matches(path, list(files), n=5, cutoff=0.5)


def suggestions(index: SnapshotIndex, target: str) -> list[str]:
    """Up to five names in the snapshot that look like ``target``."""
    tail = target.rsplit(".", 1)[-1].rsplit(">", 1)[-1].lower()
    pool = [*index.keys, *index.subjects, *index.modules]
    same_tail = sorted({p for p in pool if p.lower().rsplit(".", 1)[-1] == tail})
    if same_tail:
        return difflib.get_close_matches(target, same_tail, n=5, cutoff=0.0)
    return difflib.get_close_matches(target, sorted(set(pool)), n=5, cutoff=0.6)


def resolve_target(index: SnapshotIndex, raw: str) -> Resolution:
    """The units of the snapshot that ``raw`` designates, each with its tier."""
    target = raw.strip()
    if not target:
        raise BadInputError("target is empty; give a logical key, dotted path, module or file")
    if len(target) > MAX_TARGET_CHARS:
        raise BadInputError(f"target is longer than {MAX_TARGET_CHARS} characters")
    res = Resolution()
    if res.add((e.artifact_id for e in index.by_key.get(target, ())), Tier.KEY):
        res.readings.append(f"logical key {target}")
    elif looks_like_path(target):
        _as_file(index, target, res)
    else:
        _as_dotted(index, target, res)
    if not res.tiers:
        raise UnknownTargetError(target, index.sha, suggestions(index, target))
    return res
