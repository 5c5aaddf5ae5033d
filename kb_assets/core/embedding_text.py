"""The text a knowledge unit is embedded as: what it is, what it says and what it is grounded on.

Pure and deterministic, and a function of the artifact's identity only: kind, logical key, the
stored (location-free) payload and the grounding's paths, roles and qualified names — never line
numbers — so one artifact id always gives one text, and an id embedded once never needs embedding
again (``kb embed`` relies on this). Dotted names are followed by their last part in plain words
(``shop.routers.users.create_user (create user)``) so plain-language questions meet identifiers.
The most telling fields come first: the model reads only the first ~256 word pieces.
``TEXT_VERSION`` is part of the embedding asset's code version; bump it when the rendering changes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kb_assets.core.models import JSON

TEXT_VERSION = "1"
"""Appending the plain words of URL paths (tried as 2) made fief-server's questions rank worse
(16 instead of 21 of 26 in the top 5, ``bench/embed_search.py``): every admin route then shares
"admin api", which drowns the resource name."""
MAX_LIST_ITEMS = 12
MAX_GROUNDING = 16
MAX_VALUE_CHARS = 300

FIELD_ORDER: dict[str, tuple[str, ...]] = {
    "api_route": ("method", "path", "handler", "response_model", "status_code", "tags", "name"),
    "entity": ("name", "framework", "fields", "references"),
    "public_symbol": ("package", "name", "symbol_kind", "target"),
    "import_edge": ("importer", "imported", "external", "type_checking_only"),
    "event_handler": ("handler", "registrations"),
    "call_edge": ("caller", "callee"),
    "process_path": ("entrypoint", "sink", "chain"),
    "description": ("target", "target_kind", "summary", "claims"),
    "decision": ("decision", "message", "commit", "claims"),
}
"""Payload fields in the order they are rendered (other fields follow, sorted by name)."""

SKIPPED_FIELDS = frozenset({"lines", "span_mapping", "span_ids"})
"""Location details or ids: no words for a reader, and ``lines`` is not even stored."""

_PIECES = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_DOTTED = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)+$")


@dataclass(frozen=True, slots=True, order=True)
class GroundingName:
    """What one grounding edge names: the file, the span's qualified name in it, and the role."""

    path: str
    fq_symbol_path: str
    role: str


def words(name: str) -> str:
    """The last part of a dotted or snake/camel-case name in lower-case words (``UserCreate`` ->
    ``user create``)."""
    return " ".join(p.lower() for p in _PIECES.findall(name.rsplit(".", 1)[-1]))


def vector_model_id(model_id: str) -> str:
    """What is stored as ``embedding_model_id``: the model and this text rule, so that a vector is
    reused only for the same model *and* the same rendering (a ``TEXT_VERSION`` bump re-embeds)."""
    return f"{model_id}#text-v{TEXT_VERSION}"


def _scalar(value: JSON) -> str:
    """A scalar as text; dotted names get their plain words appended."""
    text = "null" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
    if isinstance(value, str) and _DOTTED.match(value):
        plain = words(value)
        return f"{value} ({plain})" if plain else value
    return text


def render_value(value: JSON) -> str:
    """A compact, deterministic rendering of a payload value (long lists are cut with ``+N more``)."""
    if isinstance(value, list):
        shown = [render_value(v) for v in value[:MAX_LIST_ITEMS]]
        more = len(value) - MAX_LIST_ITEMS
        text = ", ".join(shown) + (f", +{more} more" if more > 0 else "")
        return f"[{text}]" if any(isinstance(v, list | dict) for v in value) else text
    if isinstance(value, dict):
        inner = "; ".join(
            f"{k}: {render_value(v)}" for k, v in sorted(value.items()) if v not in (None, "", [])
        )
        return f"{{{inner}}}"
    return _scalar(value)


def render_payload(kind: str, payload: Mapping[str, JSON]) -> list[str]:
    """``field: value`` lines, telling fields first, empty and location fields left out."""
    order = FIELD_ORDER.get(kind, ())
    keys = [k for k in order if k in payload] + sorted(k for k in payload if k not in order)
    lines = []
    for key in keys:
        value = payload[key]
        if key in SKIPPED_FIELDS or value is None or value in ("", [], {}):
            continue
        text = render_value(value)
        lines.append(f"{key.replace('_', ' ')}: {text[:MAX_VALUE_CHARS]}")
    return lines


def render_grounding(grounding: Iterable[GroundingName]) -> str:
    """``path: name (role)`` for each distinct grounding edge, sorted, at most ``MAX_GROUNDING``."""
    edges = sorted(set(grounding))
    shown = [f"{g.path}: {g.fq_symbol_path} ({g.role})" for g in edges[:MAX_GROUNDING]]
    more = len(edges) - MAX_GROUNDING
    return "; ".join(shown) + (f"; +{more} more" if more > 0 else "")


def unit_text(
    kind: str, logical_key: str, payload: Mapping[str, JSON], grounding: Iterable[GroundingName]
) -> str:
    """The text to embed for one knowledge unit (see the module docstring)."""
    lines = [f"{kind.replace('_', ' ')} {logical_key}", *render_payload(kind, payload)]
    grounded = render_grounding(grounding)
    if grounded:
        lines.append(f"grounded on {grounded}")
    return "\n".join(lines)
