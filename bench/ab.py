"""A/B: does knowbase context make a model answer code questions better than RAG context?

    ANTHROPIC_API_KEY=... python bench/ab.py REPO [--sha REV] [--questions FILE] [-n 12] [--k 6] [--out F]

Key-gated and non-gating (nightly-style): without a usable provider (``KB_LLM_PROVIDER``, its SDK
and key) it prints why and exits 0; it asserts nothing and never fails a build. For each question,
the answerer model (``KB_LLM_PROVIDER`` / ``KB_LLM_MODEL``) answers twice with the same
instructions: once from **knowbase context** (the indexed units about the question's target, with
``file:start-end`` provenance, plus their descriptions when ``kb describe`` ran) and once from
**RAG context** (the repository's `.py` files at the commit cut into 40-line chunks, the ``--k``
best by lexical overlap with the question; the same character budget as the knowbase context).
A judge (``KB_AB_JUDGE_MODEL``, default the answerer's model) sees the question, the target's own
source code (the ground truth) and one answer, and scores ``accuracy`` (0..1: how correct and
complete against the code) and ``hallucination`` (0..1: share of the answer's statements the code
does not support). Prints one line per question and arm, then the means, tokens and estimated cost.

Questions: ``--questions`` (JSON lines ``{"question": ..., "target": "logical key"}``), else one
per route, event handler, entity and (up to ``-n`` in all) module of the indexed snapshot.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from kb_assets.cli.session import Session, indexed_sha, open_session  # noqa: E402
from kb_assets.core.errors import KbError  # noqa: E402
from kb_resources.llm.base import LlmRequest, ProviderUnavailableError, RequestFailedError  # noqa: E402
from kb_resources.llm.client import LlmClient, Usage  # noqa: E402
from kb_resources.llm.factory import llm_config, open_llm  # noqa: E402
from kb_resources.store import reads  # noqa: E402
from kb_resources.store.snapshot_reads import ArtifactRecord  # noqa: E402

CHUNK_LINES = 40
CONTEXT_CHARS = 12_000
QUESTION_KINDS = ("api_route", "event_handler", "entity", "module")

ANSWER_SYSTEM = (
    "You answer questions about a Python code base using ONLY the context given. If the context does "
    "not contain the answer, say so. Be concise: at most five sentences. Reply with JSON "
    '{"answer": "..."}.'
)
JUDGE_SYSTEM = (
    "You grade an answer to a question about code. You are given the question, the relevant source "
    "code (the ground truth) and the answer. Score accuracy from 0 to 1 (correct and complete against "
    "the code) and hallucination from 0 to 1 (the share of the answer's statements the code does not "
    'support). Reply with JSON {"accuracy": number, "hallucination": number, "reason": "one sentence"}.'
)
ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}
JUDGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "accuracy": {"type": "number"},
        "hallucination": {"type": "number"},
        "reason": {"type": "string"},
    },
    "required": ["accuracy", "hallucination", "reason"],
    "additionalProperties": False,
}
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Question:
    """A question about one unit of the snapshot (its logical key)."""

    question: str
    target: str


@dataclass(frozen=True)
class Chunk:
    """A piece of a source file (the RAG arm's unit of retrieval)."""

    path: str
    start: int
    text: str


@dataclass(frozen=True)
class Score:
    """The judge's verdict on one answer."""

    accuracy: float
    hallucination: float
    reason: str


def default_questions(records: Sequence[ArtifactRecord], limit: int) -> list[Question]:
    """One question per route, event handler and entity, then per module, at most ``limit``."""
    found: list[Question] = []
    by_kind = {
        kind: sorted((r for r in records if r.kind == kind), key=lambda r: r.logical_key)
        for kind in QUESTION_KINDS
    }
    for record in by_kind["api_route"]:
        method, path = record.payload.get("method"), record.payload.get("path")
        found.append(
            Question(
                f"What happens when a client calls {method} {path}? What does it return?", record.logical_key
            )
        )
    for record in by_kind["event_handler"]:
        found.append(
            Question(
                f"When does {record.payload.get('handler')} run, and what does it do?", record.logical_key
            )
        )
    for record in by_kind["entity"]:
        found.append(
            Question(
                f"What is {record.payload.get('name')} and what fields does it have?", record.logical_key
            )
        )
    modules = sorted(
        {str(r.payload["importer"]) for r in records if r.kind == "import_edge" and r.payload.get("importer")}
    )
    found += [Question(f"What is the module {m} responsible for?", f"module:{m}") for m in modules]
    return found[:limit]


def words(text: str) -> Counter[str]:
    """Lower-cased identifier words, ``snake_case`` and dotted names split."""
    out: Counter[str] = Counter()
    for word in _WORD.findall(text):
        out.update(w for w in word.lower().split("_") if len(w) > 1)
    return out


def chunks(files: dict[str, str]) -> list[Chunk]:
    """Every file cut into ``CHUNK_LINES``-line chunks."""
    out = []
    for path in sorted(files):
        lines = files[path].splitlines()
        for start in range(0, len(lines), CHUNK_LINES):
            out.append(Chunk(path, start + 1, "\n".join(lines[start : start + CHUNK_LINES])))
    return out


def rag_context(question: str, pieces: Sequence[Chunk], k: int, budget: int = CONTEXT_CHARS) -> str:
    """The ``k`` chunks sharing the most words with the question (ties by path, line), within budget."""
    asked = words(question)
    ranked = sorted(
        pieces, key=lambda c: (-sum(min(n, asked[w]) for w, n in words(c.text).items()), c.path, c.start)
    )
    out, left = [], budget
    for chunk in ranked[:k]:
        block = f"# {chunk.path}:{chunk.start}\n{chunk.text}"
        if len(block) > left:
            break
        out.append(block)
        left -= len(block)
    return "\n\n".join(out)


def relevant(records: Sequence[ArtifactRecord], target: str) -> list[ArtifactRecord]:
    """The target's own unit, its description, then units naming the target."""
    name = target.partition(":")[2]
    own = [
        r
        for r in records
        if r.logical_key == target or (target.startswith("module:") and r.logical_key == f"describe:{name}")
    ]
    described = [r for r in records if r.kind == "description" and r.payload.get("target") == name]
    naming = [r for r in records if r not in own and name and name in json.dumps(r.payload)]
    seen: list[ArtifactRecord] = []
    for record in [*own, *described, *naming]:
        if record not in seen:
            seen.append(record)
    return seen


def knowbase_context(records: Sequence[ArtifactRecord], target: str, budget: int = CONTEXT_CHARS) -> str:
    """The knowbase units about ``target`` with provenance, within budget."""
    out, left = [], budget
    for record in relevant(records, target):
        where = ", ".join(f"{g.path}:{g.start_line}-{g.end_line}" for g in record.grounding if g.start_line)
        payload = json.dumps(record.payload, sort_keys=True)
        block = f"[{record.kind}] {record.logical_key} ({record.method}; {where})\n{payload}"
        if len(block) > left:
            break
        out.append(block)
        left -= len(block)
    return "\n\n".join(out)


def truth(session: Session, sha: str, records: Sequence[ArtifactRecord], target: str) -> str:
    """The source code the target's units are grounded on (what the judge checks against)."""
    files = {f.path: f.blob_id for f in session.repo.python_files(sha)}
    spans: set[tuple[str, int, int]] = set()
    for record in relevant(records, target)[:3]:
        spans |= {(g.path, g.start_line, g.end_line) for g in record.grounding if g.start_line and g.end_line}
    out = []
    for path, start, end in sorted(spans):
        if path in files:
            lines = session.repo.read_blob(files[path]).decode("utf-8", "replace").splitlines()
            out.append(f"# {path}:{start}-{end}\n" + "\n".join(lines[start - 1 : end]))
    return "\n\n".join(out)[: 2 * CONTEXT_CHARS]


def ask(
    client: LlmClient, usage: Usage, system: str, user: str, schema: dict[str, Any]
) -> dict[str, Any] | None:
    """One JSON request; None when it failed or the reply is not JSON."""
    try:
        completion = client.complete(LlmRequest(system=system, user=user, tool_name="reply", schema=schema))
    except RequestFailedError:
        return None
    usage.add(completion)
    value = completion.value
    if isinstance(value, str):
        start, end = value.find("{"), value.rfind("}")
        try:
            value = json.loads(value[start : end + 1])
        except ValueError:
            return None
    return value if isinstance(value, dict) else None


def score(client: LlmClient, usage: Usage, question: str, code: str, answer: str) -> Score | None:
    """The judge's verdict on one answer, clamped to 0..1."""
    user = f"Question: {question}\n\nSource code (ground truth):\n```python\n{code}\n```\n\nAnswer:\n{answer}"
    verdict = ask(client, usage, JUDGE_SYSTEM, user, JUDGE_SCHEMA)
    try:
        assert verdict is not None
        return Score(
            min(1.0, max(0.0, float(verdict["accuracy"]))),
            min(1.0, max(0.0, float(verdict["hallucination"]))),
            str(verdict.get("reason", "")),
        )
    except (AssertionError, KeyError, TypeError, ValueError):
        return None


def load_questions(path: str | None, records: Sequence[ArtifactRecord], limit: int) -> list[Question]:
    """``--questions`` or the generated default set."""
    if path is None:
        return default_questions(records, limit)
    rows = [json.loads(line) for line in Path(path).read_text("utf-8").splitlines() if line.strip()]
    return [Question(str(r["question"]), str(r["target"])) for r in rows][:limit]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the A/B and print the figures (exit 0 unless the inputs are wrong)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("repo", nargs="?", default=".")
    parser.add_argument("--db-url", default=None)
    parser.add_argument("--sha", default=None)
    parser.add_argument("--questions", default=None, help="JSON lines of {question, target}")
    parser.add_argument("-n", type=int, default=12, help="at most N questions (12)")
    parser.add_argument("--k", type=int, default=6, help="RAG chunks per question (6)")
    parser.add_argument("--out", default=None, help="also write every result as JSON here")
    args = parser.parse_args(argv)
    try:
        session = open_session(args)
        config = llm_config(session.settings)
        answerer = open_llm(config)
        judge_model = os.environ.get("KB_AB_JUDGE_MODEL") or None
        judge = open_llm(replace(config, model=judge_model)) if judge_model else answerer
    except ProviderUnavailableError as err:
        print(f"bench/ab.py: skipped (non-gating): {err.message}")
        return 0
    except KbError as err:
        print(f"bench/ab.py: {err.message}", file=sys.stderr)
        return err.exit_code
    sha = indexed_sha(session, args.sha)
    with session.store.engine.connect() as conn:
        records = reads.snapshot_records(conn, sha)
    files = {
        f.path: session.repo.read_blob(f.blob_id).decode("utf-8", "replace")
        for f in session.repo.python_files(sha)
    }
    pieces = chunks(files)
    questions = load_questions(args.questions, records, args.n)
    usage = Usage()
    results: list[dict[str, Any]] = []
    print(
        f"A/B on {sha[:12]}: {len(questions)} questions, answerer {answerer.model_id}, judge {judge.model_id}"
    )
    for question in questions:
        code = truth(session, sha, records, question.target)
        contexts = {
            "knowbase": knowbase_context(records, question.target),
            "rag": rag_context(question.question, pieces, args.k),
        }
        for arm, context in contexts.items():
            reply = ask(
                answerer,
                usage,
                ANSWER_SYSTEM,
                f"Context:\n{context}\n\nQuestion: {question.question}",
                ANSWER_SCHEMA,
            )
            answer = str(reply.get("answer", "")) if reply else ""
            verdict = score(judge, usage, question.question, code, answer) if answer else None
            results.append(
                {
                    "target": question.target,
                    "arm": arm,
                    "answer": answer,
                    "score": verdict and verdict.__dict__,
                }
            )
            shown = (
                f"accuracy {verdict.accuracy:.2f} hallucination {verdict.hallucination:.2f}"
                if verdict
                else "no score"
            )
            print(f"{arm:9} {question.target}: {shown}")
    for arm in ("knowbase", "rag"):
        scored = [r["score"] for r in results if r["arm"] == arm and r["score"]]
        if scored:
            acc = sum(s["accuracy"] for s in scored) / len(scored)
            hal = sum(s["hallucination"] for s in scored) / len(scored)
            print(
                f"{arm}: mean accuracy {acc:.3f}, mean hallucination {hal:.3f} "
                f"over {len(scored)} scored answers"
            )
        else:
            print(f"{arm}: no scored answers")
    cost = usage.cost(answerer.price)
    shown_cost = f"${cost:.4f}" if cost is not None else "unknown"
    print(
        f"calls {usage.calls}, tokens {usage.input_tokens}+{usage.output_tokens}, estimated cost {shown_cost}"
    )
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2, sort_keys=True) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
