"""``kb``: the command line. Parses arguments, dispatches, and maps every expected failure to one
line on stderr and the contract's exit code (0 ok, 1 a check failed, 2 bad input, 3 store)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from kb_assets.core.errors import KbError
from kb_resources.store import early_start

Handler = Callable[[argparse.Namespace], int]


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (exit 2), as the contract asks."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"kb: {message} (see `{self.prog} --help`)\n")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "repo", nargs="?", default=".", metavar="REPO", help="a path inside a git repository (default .)"
    )
    p.add_argument(
        "--db-url", default=None, help="PostgreSQL URL of the store (default: KB_DB_URL, else embedded)"
    )


def build_parser() -> argparse.ArgumentParser:
    """The full ``kb`` argument parser."""
    from kb_assets.cli import (
        diff,
        embed,
        export,
        index,
        introspect,
        model_passes,
        parse,
        status,
        store_cmds,
        ui,
        verify,
        watch,
    )
    from kb_mcp import cli as serve

    parser = _Parser(prog="kb", description="knowbase: grounded, versioned knowledge of a git repository")
    parser.add_argument("--debug", action="store_true", help="show tracebacks for unexpected errors")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    registrations: list[tuple[str, str, Callable[[argparse.ArgumentParser], None], Handler]] = [
        ("index", "index a commit into the knowledge store", index.add_arguments, index.run),
        (
            "parse",
            "parse a commit's blobs (--shard K/N: a share of them) into the store's cache ahead of kb index",
            parse.add_arguments,
            parse.run,
        ),
        ("export", "write a commit's snapshot as JSON lines", export.add_export_arguments, export.run_export),
        (
            "spans",
            "write a commit's span occurrences as JSON lines",
            export.add_spans_arguments,
            export.run_spans,
        ),
        (
            "show",
            "print a few knowledge units with their provenance",
            export.add_show_arguments,
            export.run_show,
        ),
        ("status", "what is indexed, per branch", status.add_arguments, status.run),
        (
            "migrate",
            "create or upgrade the store's schema",
            store_cmds.add_migrate_arguments,
            store_cmds.run_migrate,
        ),
        ("ui", "start the Dagster UI for this repository (loopback)", ui.add_arguments, ui.run),
        ("watch", "follow branches and index each new commit", watch.add_arguments, watch.run),
        (
            "verify",
            "compare an indexed commit with grimp's and griffe's view",
            verify.add_arguments,
            verify.run,
        ),
        (
            "describe",
            "summaries and grounded claims for an indexed commit's targets (a model; key-gated)",
            model_passes.add_describe_arguments,
            model_passes.run_describe,
        ),
        (
            "mine",
            "decisions from first-party git history (a model; key-gated; --prs adds PR text)",
            model_passes.add_mine_arguments,
            model_passes.run_mine,
        ),
        ("diff", "knowledge added, removed and changed between two commits", diff.add_arguments, diff.run),
        (
            "embed",
            "embed an indexed commit's units (--rag: and its source chunks)",
            embed.add_arguments,
            embed.run,
        ),
        (
            "serve",
            "the MCP server over stdio (read-only; --http for loopback HTTP)",
            serve.add_arguments,
            serve.run,
        ),
        (
            "introspect",
            "list the routes FastAPI serves for MODULE:APP (sandboxed)",
            introspect.add_arguments,
            introspect.run,
        ),
    ]
    for name, help_text, add, handler in registrations:
        p = sub.add_parser(name, help=help_text, description=help_text)
        _common(p)
        add(p)
        p.set_defaults(handler=handler)
    return parser


STORE_COMMANDS = frozenset(
    {"index", "parse", "export", "spans", "show", "status", "migrate", "watch", "verify"}
    | {"describe", "mine", "diff", "embed"}
)
"""The commands that open the store first thing (``session.open_session``)."""


def _store_soon(argv: Sequence[str]) -> None:
    """Have the embedded server started while the command's modules are imported
    (``early_start``), for a store command that names no other store."""
    if not argv or argv[0] not in STORE_COMMANDS:
        return
    if any(a == "--db-url" or a.startswith("--db-url=") for a in argv):
        return
    from kb_resources.settings import load_settings

    settings = load_settings()
    if settings.db_url is None:
        early_start.start_soon(settings.embedded_pgdata)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``kb`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["serve"]:  # fast start: the MCP server needs none of the other commands' imports
        from kb_mcp.cli import main as serve_main

        return serve_main(argv[1:])
    _store_soon(argv)
    try:
        return _dispatch(argv)
    finally:
        early_start.settle()  # an early start the command did not take ends here, not in the exit


def _dispatch(argv: Sequence[str]) -> int:
    """Parse ``argv`` and run its command, mapping every expected failure to its exit code."""
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except KbError as err:
        print(f"kb: {err.message}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("kb: interrupted; the store is unchanged by the unfinished step", file=sys.stderr)
        return 130
    except Exception as err:
        if args.debug:
            raise
        from kb_resources.store.failures import lost_store  # only on this path: keeps start-up light

        lost = lost_store(err, "the configured database")
        if lost is not None:
            print(f"kb: {lost.message}", file=sys.stderr)
            return lost.exit_code
        print(
            f"kb: internal error: {type(err).__name__}: {' '.join(str(err).split())} "
            "(rerun with --debug for details)",
            file=sys.stderr,
        )
        return 1


def entry() -> NoReturn:
    """The ``kb`` console script: ``main`` run as a batch process (see ``kb_assets.cli.process``)."""
    from kb_assets.cli.process import exit_now, one_malloc_arena, skip_unused_imports
    from kb_assets.core.collector import tune_collector

    one_malloc_arena()
    skip_unused_imports()
    tune_collector()
    exit_now(main())


if __name__ == "__main__":
    entry()
