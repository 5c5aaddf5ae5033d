"""One line per unit, for a model skimming a page of keys: what the unit says, in words.

Built from the stored (location-free) payload only, so a listing never needs grounding rows.
Unknown kinds, and payloads missing the fields a kind promises, fall back to the logical key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

MAX_SUMMARY_CHARS = 200

Payload = Mapping[str, Any]


def _names(values: Any, limit: int = 6) -> str:
    """A short comma list of strings (``a, b, c, +3 more``)."""
    items = [str(v) for v in values] if isinstance(values, list) else []
    shown = ", ".join(items[:limit])
    return f"{shown}, +{len(items) - limit} more" if len(items) > limit else shown


def _import(p: Payload) -> str:
    flags = [f for f, on in (("type-checking only", p.get("type_checking_only")),) if on]
    where = "external" if p.get("external") else "first-party"
    suffix = f" ({', '.join([where, *flags])})"
    return f"{p['importer']} imports {p['imported']}{suffix}"


def _public(p: Payload) -> str:
    target = p.get("target")
    to = f" -> {target}" if target else " (target unresolved)"
    return f"public {p.get('symbol_kind', 'symbol')} {p['package']}.{p['name']}{to}"


def _route(p: Payload) -> str:
    return f"{p['method']} {p['path']} handled by {p['handler']}"


def _entity(p: Payload) -> str:
    return f"{p.get('framework', '')} entity {p['name']} with fields {_names(p.get('fields', []))}".strip()


def _event(p: Payload) -> str:
    events = [str(r.get("event")) for r in p.get("registrations", []) if isinstance(r, Mapping)]
    return f"{p['handler']} handles {_names(sorted(set(events))) or 'events'}"


def _call(p: Payload) -> str:
    return f"{p['caller']} calls {p['callee']}"


def _path(p: Payload) -> str:
    chain = p.get("chain", [])
    hops = f" ({len(chain) - 1} hops)" if isinstance(chain, list) and len(chain) > 1 else ""
    return f"{p['entrypoint']} reaches {p['sink']}{hops}"


def _description(p: Payload) -> str:
    return str(p["summary"]).split(". ")[0]


def _decision(p: Payload) -> str:
    return str(p.get("decision") or p["message"]).splitlines()[0]


_BY_KIND: dict[str, Callable[[Payload], str]] = {
    "import_edge": _import,
    "public_symbol": _public,
    "api_route": _route,
    "entity": _entity,
    "event_handler": _event,
    "call_edge": _call,
    "process_path": _path,
    "description": _description,
    "decision": _decision,
}


def summarize(kind: str, logical_key: str, payload: Payload) -> str:
    """One line saying what the unit claims (the logical key when the payload says too little)."""
    render = _BY_KIND.get(kind)
    try:
        line = render(payload) if render is not None else logical_key
    except (KeyError, TypeError, AttributeError, IndexError):
        line = logical_key
    line = " ".join(line.split()) or logical_key
    return line if len(line) <= MAX_SUMMARY_CHARS else line[: MAX_SUMMARY_CHARS - 3] + "..."
