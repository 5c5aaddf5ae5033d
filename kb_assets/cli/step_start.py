"""How the multiprocess executor starts the step processes of ``kb index --processes N``.

Forked from a server that imported ``kb_assets.step_processes`` once (Dagster, the Definitions,
knowbase's collector thresholds), not spawned as fresh interpreters that import all of that again
for every step: on Django's full index 84.5 s became 38.5 s on two cores. A step process takes
its settings (the repository, the store) from its environment, and a fork server's children get
the environment of the server, which Python starts once per process and keeps: a second run of
this process with other settings (a library caller or a test indexing two repositories) would
reach the first run's store. Such a run spawns its steps instead (``start_method``). Nothing
else in knowbase starts a fork server (the parse workers are spawned explicitly), so the first
run to ask is the one that starts it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

PRELOADED = "kb_assets.step_processes"
"""The module the fork server imports before it forks any step process."""

FORKSERVER: dict[str, Any] = {"forkserver": {"preload_modules": [PRELOADED]}}
SPAWN: dict[str, Any] = {"spawn": {}}

_server_environ: dict[str, str] | None = None
"""The environment of the first run that used the fork server: the one its children inherit."""


def start_method(environ: Mapping[str, str]) -> dict[str, Any]:
    """The executor's ``start_method`` config for a run whose step processes need ``environ``:
    the fork server, unless this process's fork server was started for another environment."""
    global _server_environ  # noqa: PLW0603 - the fork server is process-wide too
    current = dict(environ)
    if _server_environ is None:
        _server_environ = current
    return FORKSERVER if current == _server_environ else SPAWN
