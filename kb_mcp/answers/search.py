"""What ``search_knowledge`` answers: nearest units by embedding, or keyword matches and why."""

from __future__ import annotations

from typing import Literal

from kb_assets.core.errors import BadInputError
from kb_mcp.context import ServeContext
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
    "This snapshot is embedded (model {model}), but this server has no query embedder for that model "
    "(install the 'embed' extra and restart `kb serve`). Meanwhile these units match the query's keywords."
)

Status = Literal["ok", "embeddings_absent", "no_query_embedder"]


def search_answer(serve: ServeContext, query: str, sha: str | None, k: int, budget: int) -> SearchAnswer:
    """The ``k`` units nearest to ``query`` (semantic when the snapshot is embedded, else lexical)."""
    if not query.strip() or len(query) > MAX_QUERY_CHARS:
        raise BadInputError(f"query must be 1 to {MAX_QUERY_CHARS} characters of text")
    with serve.reading(sha) as (conn, commit, view):
        index = serve.index(conn, commit)
        model = reads.embedding_model(conn, commit)
        status: Status = "embeddings_absent" if model is None else "no_query_embedder"
        ranked: list[Entry]
        if model is not None and serve.query_embedder is not None:
            status = "ok"
            nearest = reads.nearest_artifacts(conn, commit, model, serve.query_embedder(query), k)
            ranked = [index.by_id[aid] for aid, _ in nearest if aid in index.by_id]
        else:
            ranked = lexical_ranking(index, query, k)
        message = {"ok": None, "embeddings_absent": ABSENT, "no_query_embedder": NO_EMBEDDER}[status]
        answer = SearchAnswer(
            query=query,
            sha=commit,
            status=status,
            ranking="semantic" if status == "ok" else "lexical",
            message=message.format(model=model) if message else None,
            units=[],
            omitted=Omitted(),
        )
        fill(answer, ranked, lambda b: load_units(conn, view, commit, b), budget, "raise token_budget")
    return answer
