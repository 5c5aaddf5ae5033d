"""Running knowbase end to end in tests: an isolated environment and the real ``kb`` CLI.

``KbEnv`` points KB_HOME, DAGSTER_HOME and KB_DB_URL at throwaway places (a fresh database on the
session's server), runs ``kb`` either in-process (fast; same code path as the console script) or
as a real subprocess (exit codes, stderr, progress), and restores the environment afterwards.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kb_assets.cli.main import main
from kb_assets.indexing.load import forget_programs
from kb_resources.resources import close_cached


@dataclass(frozen=True)
class CliResult:
    """What one ``kb`` invocation did."""

    code: int
    stdout: str
    stderr: str

    def jsonl(self) -> list[dict[str, Any]]:
        """stdout parsed as JSON lines."""
        return [json.loads(line) for line in self.stdout.splitlines() if line.strip()]


@dataclass
class KbEnv:
    """An isolated knowbase environment for one test."""

    home: Path
    db_url: str
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def environ(self) -> dict[str, str]:
        """The variables that isolate this environment."""
        return {
            "KB_HOME": str(self.home),
            "DAGSTER_HOME": str(self.home / "dagster"),
            "KB_DB_URL": self.db_url,
            **self.extra,
        }

    def kb(self, *args: str | Path) -> CliResult:
        """Run ``kb`` in-process and capture its output and exit code."""
        out, err = io.StringIO(), io.StringIO()
        saved = dict(os.environ)
        os.environ.update(self.environ)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    code = main([str(a) for a in args])
                except SystemExit as exit_:
                    code = int(exit_.code or 0)
        finally:
            os.environ.clear()
            os.environ.update(saved)
        return CliResult(code, out.getvalue(), err.getvalue())

    def kb_process(self, *args: str | Path, extra_env: dict[str, str] | None = None) -> CliResult:
        """Run ``kb`` as a real subprocess (the console script's module) and capture everything."""
        env = {**os.environ, **self.environ, **(extra_env or {})}
        proc = subprocess.run(
            [sys.executable, "-m", "kb_assets.cli.main", *map(str, args)],
            capture_output=True,
            text=True,
            env=env,
            check=False,
            timeout=600,
        )
        return CliResult(proc.returncode, proc.stdout, proc.stderr)

    def close(self) -> None:
        """Release cached stores and programs opened by in-process runs."""
        close_cached()
        forget_programs()
