"""What ``search_knowledge`` answers: nearest units by embedding, or keyword matches and why.

Semantic ranking needs the snapshot's units embedded (``kb embed``) and a query embedder of the
same model; the model is the one most of the snapshot's vectors have. Units are ranked by
pgvector's cosine distance to the query and then go through the same loading (provenance,
freshness) and token-budget trimming as ``get_knowledge``. Without embeddings, or without a way to
embed the query here, the answer is keyword matches with a status and a message saying why — never
an error. A snapshot embedded only in part (a new commit shares most ids with its parent) is
searched over what is embedded, and ``not_embedded`` says how many units could not be found.
"""

from __future__ import annotations

from typing import Literal

from kb_assets.core.errors import BadInputError
from kb_mcp.context import QueryEmbedder, ServeContext
from kb_mcp.lexical import lexical_ranking
from kb_mcp.models import Omitted, SearchAnswer
from kb_mcp.ranking import fill
from kb_mcp.snapshots import Entry
from kb_mcp.units import load_units
from kb_resources.store import reads

MAX_QUERY_CHARS = 2000
ABSENT = (
    "Semantic search needs embeddings, and this snapshot has none yet: run `kb embed` on the repository "
    "(then ask again). Meanwhile these units match the query's keywords; get_knowledge with a dotted "
    "path or list_knowledge with a key prefix finds units exactly."
)
NO_EMBEDDER = (
    "This snapshot is embedded (model {model}), but this server cannot embed the query with that model"
    "{reason}. Meanwhile these units match the query's keywords."
)
PARTIAL = (
    "{missing} of this snapshot's {total} units have no {model} vector yet and cannot be found by "
    "meaning: run `kb embed` on this commit."
)
BUDGET_HINT = "raise token_budget, or lower k"

Status = Literal["ok", "embeddings_absent", "no_query_embedder"]


def _query_vector(serve: ServeContext, model: str, query: str) -> tuple[list[float] | None, str]:
    """The query's vector under ``model``, or None and why not (the first call may load the model)."""
    from kb_resources.embedding.port import EmbedderUnavailableError

    embed: QueryEmbedder | None = serve.query_embedders(model) if serve.query_embedders else None
    if embed is None:
        return None, " (this program does not know that model)"
    try:
        return [float(x) for x in embed(query)], ""
    except EmbedderUnavailableError as err:
        return None, f" ({err.reason})"


def search_answer(serve: ServeContext, query: str, sha: str | None, k: int, budget: int) -> SearchAnswer:
    """The ``k`` units nearest to ``query`` (semantic when the snapshot is embedded, else lexical)."""
    if not query.strip() or len(query) > MAX_QUERY_CHARS:
        raise BadInputError(f"query must be 1 to {MAX_QUERY_CHARS} characters of text")
    with serve.reading(sha) as (conn, commit, view):
        index = serve.index(conn, commit)
        coverage = reads.embedding_coverage(conn, commit)
        model = reads.embedding_model(conn, commit)
        status: Status = "embeddings_absent"
        message: str | None = ABSENT
        ranked: list[Entry] = []
        similarity: dict[str, float] = {}
        missing = 0
        if model is not None:
            vector, reason = _query_vector(serve, model, query)
            missing = sum(coverage.values()) - coverage.get(model, 0)
            if vector is None:
                status, message = "no_query_embedder", NO_EMBEDDER.format(model=model, reason=reason)
            else:
                status = "ok"
                message = None
                if missing:
                    message = PARTIAL.format(missing=missing, total=sum(coverage.values()), model=model)
                for aid, distance in reads.nearest_artifacts(conn, commit, model, vector, k):
                    if aid in index.by_id:
                        ranked.append(index.by_id[aid])
                        similarity[aid] = round(1.0 - distance, 4)
        if status != "ok":
            ranked = lexical_ranking(index, query, k)
        answer = SearchAnswer(
            query=query,
            sha=commit,
            status=status,
            ranking="semantic" if status == "ok" else "lexical",
            message=message,
            model=model,
            not_embedded=missing,
            similarity=[similarity[e.artifact_id] for e in ranked] if similarity else [],
            token_budget=budget,
            units=[],
            omitted=Omitted(),
        )
        answer.tokens_used = fill(
            answer, ranked, lambda b: load_units(conn, view, commit, b), budget, BUDGET_HINT
        )
        answer.similarity = [similarity[u.artifact_id] for u in answer.units] if similarity else []
    return answer
