"""The sink registry: which calls end a process path, built in and overridable per repository.

The built-in registry is data (``kb_assets/core/sinks.yaml``). A repository may override it with
``.kb/sinks.yaml`` at the indexed commit::

    max_depth: 8                 # longest chain searched (calls from the entry point); default 12
    replace: false               # true: start from an empty registry instead of the built-in one
    remove:                      # built-in entries to drop: a pattern (exactly as written) or a category
      - requests.get
      - message_queue
    sinks:                       # entries to add, per category (a category may be new)
      payments:
        - stripe.Charge.create
        - shop.ledger.write_entry            # a first-party function works too
        - {pattern: "builtins.open", mode: write}

Patterns are fnmatch patterns over dotted names (case sensitive, ``*`` also matches dots). The
*effective* registry's digest (``sinks_digest``) is part of every process path's payload, so
changing the override changes exactly the paths' identities. A file that is not valid YAML or not
of this shape is a ``bad_sinks_config`` gap and the built-in registry applies.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from importlib import resources

import yaml

from kb_assets.core.json_text import canonical_json
from kb_assets.core.models import JSON, Gap

SINKS_FILE = ".kb/sinks.yaml"
DEFAULT_MAX_DEPTH = 12
GAP_SOURCE = "process_paths"
_WRITE_MODE = frozenset("wax+")


@dataclass(frozen=True, slots=True, order=True)
class SinkRule:
    """One registry entry."""

    category: str
    pattern: str
    mode: str | None = None
    """``write``: only calls whose ``open`` mode writes."""

    def matches(self, name: str, mode: str | None) -> bool:
        """Whether a call of ``name`` (with this ``open`` mode literal, if any) is this sink."""
        if not fnmatchcase(name, self.pattern):
            return False
        return self.mode is None or (mode is not None and bool(_WRITE_MODE & set(mode)))


@dataclass(frozen=True, slots=True)
class SinkRegistry:
    """The effective registry of one commit."""

    rules: tuple[SinkRule, ...]
    max_depth: int
    digest: str

    def match(self, name: str, mode: str | None = None) -> SinkRule | None:
        """The first rule (in category, pattern order) a call matches."""
        return next((r for r in self.rules if r.matches(name, mode)), None)


def builtin_config() -> dict[str, JSON]:
    """The built-in registry as parsed from ``sinks.yaml``."""
    text = resources.files("kb_assets.core").joinpath("sinks.yaml").read_text("utf-8")
    data: dict[str, JSON] = yaml.safe_load(text)
    return data


def sink_registry(config: Mapping[str, JSON]) -> tuple[SinkRegistry, list[Gap]]:
    """The effective registry for a program's ``config`` (``.kb/sinks.yaml`` text, if any)."""
    builtin = builtin_config()
    rules = _rules(builtin.get("sinks") or {})
    depth = int(builtin.get("max_depth", DEFAULT_MAX_DEPTH))
    gaps: list[Gap] = []
    text = config.get(SINKS_FILE)
    if text is not None:
        try:
            rules, depth = _override(str(text), rules, depth)
        except (yaml.YAMLError, ValueError, TypeError, AttributeError) as exc:
            detail = f"ignored, built-in sinks apply: {str(exc).splitlines()[0][:200]}"
            gaps.append(Gap(SINKS_FILE, "bad_sinks_config", detail, None, GAP_SOURCE))
    ordered = tuple(sorted(set(rules)))
    body = {"max_depth": depth, "rules": [[r.category, r.pattern, r.mode] for r in ordered]}
    digest = hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()[:16]
    return SinkRegistry(ordered, depth, digest), gaps


def _override(text: str, rules: list[SinkRule], depth: int) -> tuple[list[SinkRule], int]:
    """Apply one override document (raises on a bad shape)."""
    data = yaml.safe_load(text) or {}
    if not isinstance(data, dict):
        raise ValueError("the top level must be a mapping")
    unknown = sorted(set(data) - {"max_depth", "replace", "remove", "sinks"})
    if unknown:
        raise ValueError(f"unknown keys {unknown}")
    if data.get("replace"):
        rules = []
    removed = data.get("remove") or []
    if not isinstance(removed, list):
        raise ValueError("remove must be a list")
    drop = {str(item) for item in removed}
    rules = [r for r in rules if r.pattern not in drop and r.category not in drop]
    rules += _rules(data.get("sinks") or {})
    if "max_depth" in data:
        depth = int(data["max_depth"])
        if depth < 0:
            raise ValueError("max_depth must be >= 0")
    return rules, depth


def _rules(sinks: Mapping[str, JSON]) -> list[SinkRule]:
    """Rules of a ``sinks:`` mapping (category → list of patterns or ``{pattern, mode}``)."""
    if not isinstance(sinks, Mapping):
        raise ValueError("sinks must map categories to lists of patterns")
    out: list[SinkRule] = []
    for category, entries in sinks.items():
        if not isinstance(entries, list):
            raise ValueError(f"sinks.{category} must be a list")
        for entry in entries:
            if isinstance(entry, str):
                out.append(SinkRule(str(category), entry))
            elif isinstance(entry, Mapping) and isinstance(entry.get("pattern"), str):
                mode = entry.get("mode")
                if mode not in (None, "write"):
                    raise ValueError(f"unknown mode {mode!r} (only 'write')")
                out.append(SinkRule(str(category), entry["pattern"], mode))
            else:
                raise ValueError(f"bad entry in sinks.{category}: {entry!r}")
    return out
