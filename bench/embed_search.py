"""Semantic search on a real FastAPI application, and embedding throughput against the raw model.

    python bench/embed_search.py [--sdist PATH] [--workdir DIR] [--k 5]

Takes the sdist of ``fief-server==0.27.0`` (a FastAPI identity server: auth flows, an admin REST
API and an admin dashboard; ``pip download --no-deps --no-binary :all:`` fetches it when no
``--sdist`` is given), commits it to a fresh git repository, runs ``kb index`` and ``kb embed
--rag`` on its own embedded store (``WORKDIR/home``), then:

- asks plain-language questions about its endpoints and the models they return through the MCP
  ``search_knowledge`` answer code and reports at which rank (1..k) an acceptable unit comes;
- asks the RAG baseline the same questions: does one of its k nearest chunks lie in the file of an
  acceptable route's handler;
- measures the model's raw rate on exactly the texts ``kb embed`` embedded (``encode`` on a list,
  no store), next to what ``kb embed`` reported, with torch's thread count (the machine's cores).

Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PACKAGE = "fief-server==0.27.0"

QUESTIONS: list[tuple[str, tuple[str, ...]]] = [
    ("How does a new user sign up for an account?", ("api:GET /register", "api:POST /register")),
    (
        "Where can a user reset a forgotten password?",
        ("api:GET /forgot", "api:POST /forgot", "api:GET /reset", "api:POST /reset"),
    ),
    ("Which endpoint issues OAuth2 access tokens?", ("api:POST /token",)),
    ("Where are the public keys to verify token signatures published?", ("api:GET /jwks.json",)),
    ("Get the profile information of the logged-in user", ("api:GET /userinfo", "api:POST /userinfo")),
    ("Where is the OpenID Connect discovery document?", ("api:GET /openid-configuration",)),
    (
        "Create a new user through the admin API",
        ("api:POST /admin/api/users/", "api:POST /admin/users/create"),
    ),
    ("List all tenants", ("api:GET /admin/api/tenants/", "api:GET /admin/tenants/")),
    (
        "Delete a webhook",
        (
            "api:DELETE /admin/api/webhooks/{id:uuid}",
            "api:DELETE /admin/webhooks/{id:uuid}/delete",
            "api:GET /admin/webhooks/{id:uuid}/delete",
        ),
    ),
    (
        "Regenerate the secret of a webhook",
        ("api:POST /admin/api/webhooks/{id:uuid}/secret", "api:POST /admin/webhooks/{id:uuid}/secret"),
    ),
    (
        "Show the delivery logs of a webhook",
        (
            "api:GET /admin/api/webhooks/{id:uuid}/logs",
            "api:GET /admin/webhooks/{id:uuid}/logs",
            "api:GET /admin/webhooks/{id:uuid}/logs/{log_id:uuid}",
        ),
    ),
    (
        "Give a role to a user",
        ("api:POST /admin/api/users/{id:uuid}/roles", "api:POST /admin/users/{id:uuid}/roles"),
    ),
    (
        "Remove a permission from a user",
        (
            "api:DELETE /admin/api/users/{id:uuid}/permissions/{permission_id:uuid}",
            "api:DELETE /admin/users/{id:uuid}/permissions/{permission_id:uuid}",
        ),
    ),
    (
        "Create an access token for a user as an administrator",
        (
            "api:POST /admin/api/users/{id:uuid}/access-token",
            "api:POST /admin/users/{id:uuid}/access-token",
            "api:GET /admin/users/{id:uuid}/access-token",
        ),
    ),
    (
        "Get the token a user obtained from an external OAuth provider",
        ("api:GET /admin/api/oauth-providers/{id:uuid}/access-token/{user_id:uuid}",),
    ),
    (
        "Change my email address",
        ("api:PATCH /email/change", "api:GET /email/change", "api:POST /email/change"),
    ),
    ("Log out", ("api:GET /logout", "api:GET /admin/auth/logout")),
    (
        "Make a theme the default one for the login pages",
        ("api:POST /admin/customization/themes/{id:uuid}/default",),
    ),
    (
        "Edit an email template",
        (
            "api:PATCH /admin/api/email-templates/{id:uuid}",
            "api:GET /admin/customization/email-templates/{id:uuid}/edit",
            "api:POST /admin/customization/email-templates/{id:uuid}/edit",
        ),
    ),
    (
        "Generate an encryption key for a client",
        (
            "api:POST /admin/api/clients/{id:uuid}/encryption-key",
            "api:POST /admin/clients/{id:uuid}/encryption-key",
        ),
    ),
    (
        "Configure how long a client's tokens live",
        ("api:GET /admin/clients/{id:uuid}/lifetimes", "api:POST /admin/clients/{id:uuid}/lifetimes"),
    ),
    (
        "Check the database connection while creating a workspace",
        ("api:POST /admin/workspaces/create/step3/check-connection",),
    ),
    # the models the API returns
    ("What user data does the API return for one user?", ("api:GET /admin/api/users/{id:uuid}",)),
    ("Which endpoint returns a paginated list of roles?", ("api:GET /admin/api/roles/",)),
    ("What does the API respond with when a webhook is created?", ("api:POST /admin/api/webhooks/",)),
    (
        "Update a permission and get the permission model back",
        ("api:PATCH /admin/api/permissions/{id:uuid}",),
    ),
]


def kb(*args: str) -> str:
    """Run ``kb`` in this interpreter's environment and return its stdout (exit on failure)."""
    proc = subprocess.run(
        [sys.executable, "-m", "kb_assets.cli.main", *args], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        sys.exit(f"kb {' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
    return proc.stdout


def fetch(sdist: Path | None, workdir: Path) -> Path:
    """The sdist (downloaded from PyPI when not given)."""
    if sdist is not None:
        return sdist
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--no-binary",
            ":all:",
            PACKAGE,
            "-d",
            str(workdir),
        ],
        check=True,
    )
    return next(workdir.glob("fief_server-*.tar.gz"))


def make_repo(sdist: Path, workdir: Path) -> Path:
    """The sdist's tree committed to a fresh git repository."""
    repo = workdir / "repo"
    if (repo / ".git").exists():
        return repo
    with tarfile.open(sdist) as tar:
        tar.extractall(workdir / "unpacked", filter="data")
    [top] = (workdir / "unpacked").iterdir()
    top.rename(repo)
    env = {
        **os.environ,
        "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z",
    }
    for argv in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "sdist"],
    ):
        subprocess.run(["git", "-C", str(repo), *argv], check=True, env=env)
    return repo


def ask(context: Any, k: int) -> str:
    """Ask every question of both arms; print one line each and return the snapshot's commit."""
    from kb_mcp.answers.search import search_answer
    from kb_resources.embedding.local import MODEL_ID, LocalEmbedder
    from kb_resources.store.rag_chunks import nearest_chunks

    embedder = LocalEmbedder()
    ranks: list[int | None] = []
    rag_hits = 0
    sha = ""
    print(f"\nquestions (k={k}): rank of the first acceptable unit | RAG: a handler's file among the chunks")
    for question, acceptable in QUESTIONS:
        answer = search_answer(context, question, None, k, 100_000)
        sha = answer.sha
        keys = [u.logical_key for u in answer.units]
        rank = next((i + 1 for i, key in enumerate(keys) if key in acceptable), None)
        ranks.append(rank)
        with context.store.engine.connect() as conn:
            files = _handler_files(conn, sha, acceptable)
            chunks = nearest_chunks(conn, sha, MODEL_ID, embedder.embed([question])[0], k)
        rag = bool(files & {c.path for c in chunks})
        rag_hits += rag
        print(f"  {rank or '-'}  rag {'y' if rag else 'n'}  {question}  -> {keys[0] if keys else None}")
    found = [r for r in ranks if r is not None]
    mean = sum(found) / max(len(found), 1)
    print(
        f"knowledge: {len(found)}/{len(ranks)} in the top {k} (mean rank {mean:.2f}); "
        f"RAG: {rag_hits}/{len(ranks)} with a handler's file in its top {k} chunks"
    )
    return sha


def throughput(context: Any, sha: str, embedded: str) -> None:
    """The raw model's rate on the units' texts, next to the rate ``kb embed`` reported."""
    import torch

    from kb_assets.indexing.embed import texts_of
    from kb_resources.embedding.local import LocalEmbedder
    from kb_resources.store.embeddings import pending_units

    with context.store.engine.connect() as conn:
        texts = texts_of(pending_units(conn, sha, "no-such-model"))
    embedder = LocalEmbedder()
    embedder.load()
    embedder.embed(texts[:64])  # warm-up
    started = time.perf_counter()
    embedder.embed(texts)
    raw = len(texts) / (time.perf_counter() - started)
    reported = re.search(r"\(([\d.]+) texts/s\)", embedded)
    print(
        f"throughput on {torch.get_num_threads()} torch threads: raw model {raw:.0f} units/s on the same "
        f"{len(texts)} texts; kb embed {reported.group(1) if reported else '?'} units/s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sdist", type=Path, default=None)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--k", type=int, default=5)
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="kb-embed-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    os.environ["KB_HOME"] = str(workdir / "home")
    os.environ["DAGSTER_HOME"] = str(workdir / "home" / "dagster")
    os.environ.setdefault("KB_EMBED_PROVIDER", "local")
    repo = make_repo(fetch(args.sdist, workdir), workdir)

    print(kb("index", str(repo), "--no-verify").splitlines()[0])
    embedded = kb("embed", str(repo), "--rag")
    print(embedded, end="")

    from kb_mcp.context import open_context
    from kb_resources.settings import load_settings

    context = open_context(repo, load_settings())
    try:
        sha = ask(context, args.k)
        throughput(context, sha, embedded)
    finally:
        context.close()


def _handler_files(conn: Any, sha: str, keys: tuple[str, ...]) -> set[str]:
    """Files of the handler grounding of the acceptable route units."""
    import sqlalchemy as sa

    from kb_resources.store.schema import artifact, artifact_derived_from, snapshot_entry

    d, a, s = artifact_derived_from.c, artifact.c, snapshot_entry.c
    query = (
        sa.select(d.path)
        .join(artifact, a.artifact_id == d.artifact_id)
        .join(snapshot_entry, s.artifact_id == a.artifact_id)
        .where(s.sha == sha, a.logical_key.in_(keys), d.role == "handler")
    )
    return set(conn.scalars(query))


if __name__ == "__main__":
    main()
