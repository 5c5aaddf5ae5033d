"""Reads of the model-backed passes: stored units to reuse instead of calling a model, and what a
pass staged before. Exposed through ``kb_resources.store.reads``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY

from kb_resources.store.schema import artifact, gap, staged_entry

_KEYS = ARRAY(sa.Text())


def prior_payloads(
    conn: sa.Connection, kind: str, logical_keys: Collection[str], prompt_version: str, model_id: str
) -> dict[str, list[dict[str, Any]]]:
    """Payloads of stored ``kind`` units with these logical keys, prompt version and model, from any
    commit, by logical key, each list in artifact id order (one query, the (kind, key) index)."""
    if not logical_keys:
        return {}
    keys = sa.cast(sa.bindparam("keys", sorted(set(logical_keys)), type_=_KEYS), _KEYS)
    query = (
        sa.select(artifact.c.logical_key, artifact.c.payload)
        .where(
            artifact.c.kind == kind,
            artifact.c.logical_key == sa.any_(keys),
            artifact.c.prompt_version == prompt_version,
            artifact.c.model_id == model_id,
        )
        .order_by(artifact.c.artifact_id)
    )
    found: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for key, payload in conn.execute(query).all():
        found[key].append(payload)
    return dict(found)


def staged_keys(conn: sa.Connection, sha: str, extractor_id: str) -> dict[str, str]:
    """Logical key -> artifact id of what ``extractor_id`` staged for ``sha``."""
    query = (
        sa.select(artifact.c.logical_key, artifact.c.artifact_id)
        .join(staged_entry, staged_entry.c.artifact_id == artifact.c.artifact_id)
        .where(staged_entry.c.sha == sha, staged_entry.c.extractor_id == extractor_id)
        .order_by(artifact.c.artifact_id)
    )
    return {key: aid for key, aid in conn.execute(query).all()}


def gap_details(conn: sa.Connection, source: str, reason: str) -> list[str]:
    """The details of every gap ``source`` recorded with ``reason``, on any commit (a model pass
    reads its ``no_backed_claim`` gaps to never re-send an input that yielded nothing)."""
    query = sa.select(gap.c.detail).where(gap.c.source == source, gap.c.reason == reason).distinct()
    return sorted(conn.scalars(query))
