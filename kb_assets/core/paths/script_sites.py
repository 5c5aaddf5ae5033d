"""The call sites of each file that can make it or one of its functions a CLI entry point,
found once per file (``per_file``).

Finding a program's CLI entry points (``entrypoints``) starts from two file-local facts: whether
the module calls anything under ``if __name__ == "__main__":``, and the few sites whose callee
can be a click/typer command decorator or an argparse ``set_defaults``. Scanning Django's ~180k
call sites for them took ~50 ms of every commit, in the forked copy that resolves the process
paths, which keeps nothing for the next commit. ``script_sites`` remembers each file's answer
(``per_file``): a watch makes them while it waits, and its next commit's copy scans only the
files that changed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kb_assets.core.callgraph.index import FACTS_ID
from kb_assets.core.models import JSON
from kb_assets.core.per_file import PerFile
from kb_assets.core.program import Program, SourceFile

COMMAND_ENDINGS = ("command()", "command", "group()", "group")
"""What a command decorator's callee ends with (``@click.command()``, ``@cli.group``, ...)."""
CANDIDATE_ENDINGS = (*COMMAND_ENDINGS, ".set_defaults")
"""What a site's callee ends with when it can name a command: a decorator or ``set_defaults``
call, which always has arguments (``site[2]``)."""


@dataclass(frozen=True, slots=True)
class ScriptSites:
    """One file's sites that can start a CLI entry point."""

    main_guarded: bool
    """Its module scope calls something under ``if __name__ == "__main__":``."""
    candidates: tuple[tuple[int, str, Mapping[str, JSON]], ...]
    """(scope index, callee expression, the site's extra facts) of each candidate site, in scope
    and then site order."""


NO_SITES = ScriptSites(False, ())


def _scan(source: SourceFile, facts: JSON, program: Program) -> ScriptSites:
    """The file's ``ScriptSites``, from its call facts' scope records."""
    records = facts.get("scopes", []) if isinstance(facts, Mapping) else []
    candidates: list[tuple[int, str, Mapping[str, JSON]]] = []
    main_guarded = False
    for index, rec in enumerate(records):
        for site in rec.get("calls", []):
            if len(site) <= 2:
                continue
            extra = site[2]
            if index == 0 and extra.get("m"):
                main_guarded = True
            if str(site[0]).endswith(CANDIDATE_ENDINGS):
                candidates.append((index, str(site[0]), extra))
    return ScriptSites(main_guarded, tuple(candidates)) if main_guarded or candidates else NO_SITES


script_sites: PerFile[ScriptSites] = PerFile(FACTS_ID, _scan)
"""Each module file's ``ScriptSites``, by path (``per_file``)."""
