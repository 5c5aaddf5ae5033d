"""Running a repository's FastAPI app in a sandbox, to ask the framework what it serves.

Eval-only (``kb introspect``), never on the index path. The commit's files are exported with
``git archive`` into a fresh temporary directory, and a fresh interpreter runs
``introspect_child`` there: its working directory, ``HOME`` and ``TMPDIR`` are inside the
temporary directory, its environment is built from scratch (only ``--env`` pairs are passed on),
bytecode is not written, an audit hook refuses network access, process creation and writes
outside the temporary directory, and, when this machine allows it, ``unshare --net`` gives it a
network namespace with no interfaces but loopback. A timeout bounds the whole run; the temporary
directory is removed afterwards.
"""

from __future__ import annotations

import functools
import io
import json
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from kb_assets.core.errors import BadInputError
from kb_resources.introspect_child import BAD_TARGET, IMPORT_FAILED

_CHILD = "introspect_child.py"
_PATH = "/usr/local/bin:/usr/bin:/bin"


class IntrospectionError(BadInputError):
    """The app could not be introspected: no such module or app, its import failed, or it hung."""

    def __init__(self, target: str, detail: str) -> None:
        super().__init__(f"cannot introspect {target}: {detail}")
        self.target = target
        self.detail = detail


@dataclass(frozen=True, slots=True)
class Introspection:
    """What FastAPI itself reports for one app, and how isolated the run was."""

    routes: tuple[dict[str, Any], ...]
    openapi_error: str | None
    network_namespace: bool


def export_commit(git_dir: Path, sha: str, dest: Path) -> None:
    """Write every file of commit ``sha`` under ``dest`` (``git archive``; links stay inside)."""
    proc = subprocess.run(
        ["git", "--git-dir", str(git_dir), "archive", "--format=tar", sha], capture_output=True, check=False
    )
    if proc.returncode != 0:
        raise BadInputError(f"cannot export {sha[:12]}: {proc.stderr.decode(errors='replace').strip()}")
    with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as tar:
        tar.extractall(dest, filter="data")


@functools.cache
def network_namespace() -> tuple[str, ...]:
    """The ``unshare`` prefix that gives a child its own, empty network namespace here (or none)."""
    for prefix in (("unshare", "--net"), ("unshare", "--map-root-user", "--net")):
        try:
            probe = subprocess.run([*prefix, "true"], capture_output=True, check=False, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if probe.returncode == 0:
            return (*prefix, "--")
    return ()


def run_child(
    export: Path,
    target: str,
    roots: Sequence[str],
    *,
    python: str | None = None,
    timeout_s: float = 120.0,
    env: Mapping[str, str] | None = None,
) -> Introspection:
    """Run ``introspect_child`` on ``target`` inside ``export`` (a directory in a temp dir)."""
    sandbox = export.parent
    (sandbox / "home").mkdir(exist_ok=True)
    (sandbox / "tmp").mkdir(exist_ok=True)
    child_env = {
        "PATH": _PATH,
        "HOME": str(sandbox / "home"),
        "TMPDIR": str(sandbox / "tmp"),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
        "LANG": "C.UTF-8",
        **(env or {}),
    }
    script = str(resources.files("kb_resources").joinpath(_CHILD))
    request = {
        "target": target,
        "roots": [str(export / r) if r else str(export) for r in roots],
        "allowed": str(sandbox),
    }
    prefix = network_namespace()
    argv = [*prefix, python or sys.executable, "-I", "-B", script]
    try:
        proc = subprocess.run(
            argv,
            input=json.dumps(request),
            capture_output=True,
            text=True,
            cwd=export,
            env=child_env,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise IntrospectionError(target, f"the app did not load within {timeout_s:g}s") from None
    except OSError as exc:
        raise IntrospectionError(target, f"cannot start {argv[len(prefix)]}: {exc}") from None
    if proc.returncode in (BAD_TARGET, IMPORT_FAILED):
        raise IntrospectionError(target, _last_line(proc.stderr))
    if proc.returncode != 0:
        raise IntrospectionError(target, f"the sandbox failed ({proc.returncode}): {_last_line(proc.stderr)}")
    data = json.loads(proc.stdout)
    return Introspection(tuple(data["routes"]), data.get("openapi_error"), bool(prefix))


def introspect(
    git_dir: Path,
    sha: str,
    target: str,
    roots: Sequence[str],
    *,
    python: str | None = None,
    timeout_s: float = 120.0,
    env: Mapping[str, str] | None = None,
) -> Introspection:
    """Export commit ``sha`` to a fresh temp dir and introspect ``target`` there."""
    with tempfile.TemporaryDirectory(prefix="kb-introspect-") as tmp:
        export = Path(tmp).resolve() / "repo"
        export.mkdir()
        export_commit(git_dir, sha, export)
        return run_child(export, target, roots, python=python, timeout_s=timeout_s, env=env)


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:500] if lines else "no message"
