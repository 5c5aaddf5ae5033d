"""``kb ui``: the Dagster UI and daemon for one repository, bound to loopback by default."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys

from kb_assets.cli.instance import dagster_environment, ensure_dagster_home
from kb_assets.cli.session import open_session


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Flags of ``kb ui``."""
    p.add_argument("--port", type=int, default=3000, help="port of the UI (default 3000)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default loopback only)")


def ui_command(host: str, port: int) -> list[str]:
    """The ``dagster dev`` command line for knowbase's code location."""
    return [
        sys.executable,
        "-m",
        "dagster",
        "dev",
        "-m",
        "kb_assets.definitions",
        "-h",
        host,
        "-p",
        str(port),
    ]


def run(args: argparse.Namespace) -> int:
    """Start ``dagster dev`` in its own process group and stop the whole group on exit."""
    session = open_session(args)
    ensure_dagster_home(session.settings.dagster_home)
    env = {
        **os.environ,
        **dagster_environment(session.settings, session.store),
        "KB_REPO": str(session.repo.root),
        "KB_DB_URL": session.store.real_url,
    }
    print(
        f"Dagster UI for {session.repo.root} on http://{args.host}:{args.port} (Ctrl-C stops it)",
        file=sys.stderr,
    )
    # Started with SIGINT ignored (a script's background job, ``nohup``), ``kb ui`` would ignore
    # Ctrl-C and ``dagster dev`` would inherit that and ignore ``stop_group``'s SIGINT too; a
    # ``kb ui`` then killed by its caller left the whole Dagster group running, daemon included.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)
    proc = subprocess.Popen(ui_command(args.host, args.port), env=env, start_new_session=True)
    try:
        return proc.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        stop_group(proc)
        session.store.close()


def _interrupt(signum: int, frame: object) -> None:
    """SIGTERM stops ``kb ui`` like Ctrl-C does, so the Dagster processes are stopped too."""
    raise KeyboardInterrupt


def stop_group(proc: subprocess.Popen[bytes], grace_s: float = 20.0) -> None:
    """Stop ``dagster dev`` and every process it started: SIGINT (its clean shutdown), then SIGKILL.

    ``dagster dev`` ignores SIGTERM in some states; its webserver, daemon and code servers share its
    process group, so the group is signalled, and whatever survives the grace period is killed.
    """
    try:
        os.killpg(proc.pid, signal.SIGINT)
    except ProcessLookupError:
        return
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace_s)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
