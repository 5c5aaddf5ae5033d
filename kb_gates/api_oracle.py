"""The API oracle's metric: knowbase's static route contract against what FastAPI itself serves.

Pure: it compares two lists of plain records, the ``api_route`` payloads of one app (from the
store) and the routes ``kb introspect`` read from the running framework (``introspect_child``).
Routes are matched on (method, path); FastAPI keeps a duplicate (method, path) but matches the
first, so only the first of each counts on both sides. Agreement figures: *names* is matched
pairs over all distinct pairs on either side; *handlers*, *response models*, *status codes* and
*tags* are the share of matched pairs that agree on that field.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Key = tuple[str, str]
_FIELDS = ("handler", "response_model", "status_code", "tags")
_PLURAL = {
    "handler": "handlers",
    "response_model": "response_models",
    "status_code": "status_codes",
    "tags": "tags",
}


@dataclass(frozen=True, slots=True)
class RouteComparison:
    """The outcome of comparing one app's static and runtime routes."""

    matched: tuple[Key, ...]
    static_only: tuple[Key, ...]
    runtime_only: tuple[Key, ...]
    mismatches: Mapping[str, tuple[tuple[Key, Any, Any], ...]] = field(default_factory=dict)

    @property
    def equal(self) -> bool:
        """True when both sides list the same routes and agree on every compared field."""
        return not (self.static_only or self.runtime_only or any(self.mismatches.values()))

    def agreement(self) -> dict[str, Any]:
        """Counts and ratios per compared aspect (ratios are 1.0 when there is nothing to compare)."""
        union = len(self.matched) + len(self.static_only) + len(self.runtime_only)
        figures: dict[str, Any] = {
            "names": _figure(len(self.matched), union),
            "matched": len(self.matched),
            "static_only": len(self.static_only),
            "runtime_only": len(self.runtime_only),
        }
        for name in _FIELDS:
            figures[_PLURAL[name]] = _figure(
                len(self.matched) - len(self.mismatches.get(name, ())), len(self.matched)
            )
        return figures

    def differences(self) -> list[dict[str, Any]]:
        """One JSON-ready record per difference, in a stable order."""
        out: list[dict[str, Any]] = []
        out += [{"diff": "static_only", "method": m, "path": p} for m, p in self.static_only]
        out += [{"diff": "runtime_only", "method": m, "path": p} for m, p in self.runtime_only]
        for name in _FIELDS:
            for (m, p), static, runtime in self.mismatches.get(name, ()):
                out.append({"diff": name, "method": m, "path": p, "static": static, "runtime": runtime})
        return out


def compare_routes(
    static: Iterable[Mapping[str, Any]], runtime: Iterable[Mapping[str, Any]]
) -> RouteComparison:
    """Compare static ``api_route`` payloads with runtime route records of the same app."""
    ours, theirs = _first_by_key(static), _first_by_key(runtime)
    matched = tuple(sorted(ours.keys() & theirs.keys()))
    mismatches: dict[str, tuple[tuple[Key, Any, Any], ...]] = {}
    for name in _FIELDS:
        found = []
        for key in matched:
            a, b = _field(ours[key], name), _field(theirs[key], name)
            if a != b:
                found.append((key, a, b))
        mismatches[name] = tuple(found)
    return RouteComparison(
        matched=matched,
        static_only=tuple(sorted(ours.keys() - theirs.keys())),
        runtime_only=tuple(sorted(theirs.keys() - ours.keys())),
        mismatches=mismatches,
    )


def select_app(
    payloads: Sequence[Mapping[str, Any]], target: str
) -> tuple[list[Mapping[str, Any]], str | None]:
    """The static routes of the app ``MODULE:APP`` names, and the app name they were matched by.

    The app is matched by its dotted name; for ``MODULE:factory()`` by the one app built inside
    that function; otherwise, when the static side knows exactly one app, that app is taken (an
    app known statically under another name).
    """
    dotted = target.replace(":", ".").removesuffix("()")
    chosen = [p for p in payloads if p.get("app") == dotted]
    if chosen:
        return chosen, dotted
    apps = sorted({str(p["app"]) for p in payloads if p.get("app") is not None})
    if target.endswith("()"):  # an app factory: the app built inside it
        apps = [a for a in apps if a.startswith(f"{dotted}.")]
    if len(apps) == 1:
        return [p for p in payloads if p.get("app") == apps[0]], apps[0]
    return [], None


def _first_by_key(records: Iterable[Mapping[str, Any]]) -> dict[Key, Mapping[str, Any]]:
    found: dict[Key, Mapping[str, Any]] = {}
    for record in records:
        found.setdefault((str(record["method"]), str(record["path"])), record)
    return found


def _field(record: Mapping[str, Any], name: str) -> Any:
    if name == "response_model":
        return [record.get("response_model"), record.get("response_model_shape")]
    value = record.get(name)
    return list(value) if name == "tags" and value is not None else value


def _figure(agree: int, total: int) -> dict[str, Any]:
    return {"agree": agree, "total": total, "ratio": round(agree / total, 4) if total else 1.0}
