"""``kb introspect MODULE:APP``: ask FastAPI itself which routes an app serves (eval only).

The commit's files run in a sandbox (``kb_resources.sandbox``): no network, no writes outside a
temporary directory, a timeout. Without ``--compare`` it prints one JSON line per route (method,
path, handler, operationId, response model and schema, status codes). With ``--compare`` it
prints the differences from the indexed static contract (``kb export --kind api_route`` of the
same commit) and a final ``{"agreement": ...}`` line, and exits 1 when they differ.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from kb_assets.cli.export import records
from kb_assets.cli.session import indexed_sha, open_session
from kb_assets.core.errors import BadInputError
from kb_assets.core.modules import map_modules
from kb_gates.api_oracle import compare_routes, select_app
from kb_resources.git.repo import GitRepo
from kb_resources.sandbox import introspect


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Flags of ``kb introspect``."""
    p.add_argument("target", metavar="MODULE:APP", help="the app to load, e.g. shop.main:app")
    p.add_argument(
        "--repo", dest="repo_path", default=None, metavar="PATH", help="the repository (same as REPO)"
    )
    p.add_argument(
        "--sha",
        default=None,
        metavar="REV",
        help="commit to run (default HEAD; with --compare: newest indexed)",
    )
    p.add_argument(
        "--compare",
        action="store_true",
        help="diff against the indexed static contract; exit 1 on a difference",
    )
    p.add_argument(
        "--python", default=None, metavar="PATH", help="interpreter with FastAPI and the app's dependencies"
    )
    p.add_argument(
        "--timeout", type=float, default=120.0, metavar="S", help="seconds the app may take (default 120)"
    )
    p.add_argument(
        "--env", action="append", default=[], metavar="KEY=VALUE", help="environment for the app (repeatable)"
    )


def run(args: argparse.Namespace) -> int:
    """Introspect the app; print its routes, or the comparison with the static contract."""
    if args.repo_path is not None:
        args.repo = args.repo_path
    module, sep, attr = args.target.partition(":")
    if not sep or not module or not attr:
        raise BadInputError(f"expected MODULE:APP (e.g. shop.main:app), got {args.target!r}")
    env = dict(_pair(item) for item in args.env)
    if args.compare:
        session = open_session(args, read_only=True)
        sha, repo = indexed_sha(session, args.sha), session.repo
    else:
        repo = GitRepo.open(args.repo)
        sha = repo.resolve(args.sha or "HEAD")
    roots = map_modules(f.path for f in repo.python_files(sha)).roots
    result = introspect(
        repo.git_dir, sha, args.target, roots, python=args.python, timeout_s=args.timeout, env=env
    )
    routes = sorted(result.routes, key=lambda r: (r["path"], r["method"]))
    if not args.compare:
        for route in routes:
            print(json.dumps(route, sort_keys=True))
        return 0
    return _compare(args, sha, list(result.routes), result.openapi_error)


def _compare(
    args: argparse.Namespace, sha: str, runtime: list[dict[str, Any]], openapi_error: str | None
) -> int:
    args.kind = ["api_route"]
    args.sha = sha
    payloads = [record["payload"] for _, record in records(args)]
    static, app = select_app(payloads, args.target)
    comparison = compare_routes(static, runtime)
    for diff in comparison.differences():
        print(json.dumps(diff, sort_keys=True))
    summary = {
        "agreement": comparison.agreement(),
        "static_app": app,
        "sha": sha,
        "openapi_error": openapi_error,
    }
    print(json.dumps(summary, sort_keys=True))
    if not comparison.equal:
        names = comparison.agreement()["names"]
        print(
            f"kb: static contract differs from FastAPI's ({names['agree']}/{names['total']} routes match)",
            file=sys.stderr,
        )
    return 0 if comparison.equal else 1


def _pair(item: str) -> tuple[str, str]:
    key, sep, value = item.partition("=")
    if not sep or not key:
        raise BadInputError(f"--env expects KEY=VALUE, got {item!r}")
    return key, value
