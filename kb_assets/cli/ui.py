"""``kb ui``: the Dagster UI and daemon for one repository, bound to loopback by default."""

from __future__ import annotations

import argparse
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
    proc = subprocess.Popen(ui_command(args.host, args.port), env=env, start_new_session=True)
    try:
        return proc.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
