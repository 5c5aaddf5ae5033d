"""Release history benchmark (issue 5): consecutive PyPI sdists of one library, each committed on
top of the last, indexed commit by commit through the real CLI; every incremental snapshot is
compared with a --full index of the same commit in a fresh store. Then a one-file commit is timed.

Prints figures; asserts nothing. Usage:
    python bench/history.py [--package httpx] [--versions 0.25.0 0.25.1 ...] [--work DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

DEFAULT = ("httpx", ["0.24.0", "0.24.1", "0.25.0", "0.25.1", "0.25.2", "0.26.0", "0.27.0"])
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "b@b",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "b@b",
    "GIT_CONFIG_GLOBAL": "/dev/null",
}


def sdist(package: str, version: str, cache: Path) -> Path:
    """Download (once) and extract an sdist; returns its top directory."""
    target = cache / f"{package}-{version}"
    if target.exists():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "--no-binary",
            ":all:",
            f"{package}=={version}",
            "-d",
            str(cache / "dl"),
        ],
        check=True,
    )
    archive = next(
        p for p in (cache / "dl").iterdir() if p.name.lower().startswith(f"{package.lower()}-{version}")
    )
    with tarfile.open(archive) as tar:
        tar.extractall(cache / "x", filter="data")
    top = next(p for p in (cache / "x").iterdir() if p.name.lower() == f"{package.lower()}-{version}")
    top.rename(target)
    return target


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, **GIT_ENV},
    ).stdout.strip()


def kb(home: Path, *args: str) -> tuple[float, str]:
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "kb_assets.cli.main", *args],
        check=False,
        capture_output=True,
        text=True,
        env={**os.environ, "KB_HOME": str(home)},
    )
    if proc.returncode not in (0, 1):
        raise SystemExit(f"kb {' '.join(args)} failed: {proc.stderr.strip()}")
    return time.monotonic() - start, proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--package", default=DEFAULT[0])
    parser.add_argument("--versions", nargs="+", default=DEFAULT[1])
    parser.add_argument("--work", type=Path, default=Path(tempfile.mkdtemp(prefix="kb-history-")))
    args = parser.parse_args()
    repo, cache = args.work / "repo", Path(__file__).resolve().parent / ".corpora"
    shutil.rmtree(repo, ignore_errors=True)
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    shas = []
    for version in args.versions:
        for child in repo.iterdir():
            if child.name != ".git":
                shutil.rmtree(child) if child.is_dir() else child.unlink()
        shutil.copytree(sdist(args.package, version, cache), repo, dirs_exist_ok=True)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"{args.package} {version}", "--allow-empty")
        shas.append(git(repo, "rev-parse", "HEAD"))
    incremental, full = args.work / "home-incremental", args.work / "home-full"
    print(f"{args.package}: {len(shas)} releases, repo {repo}")
    print(
        f"{'version':<10} {'sha':<12} {'mode':<12} {'files':>6} {'parsed':>7} {'reused':>7} "
        f"{'incr s':>7} {'full s':>7}  same?"
    )
    for version, sha in zip(args.versions, shas, strict=True):
        t_inc, out = kb(incremental, "index", str(repo), "--sha", sha, "--gaps", "0")
        t_full, _ = kb(full, "index", str(repo), "--sha", sha, "--full", "--gaps", "0")
        same = (
            kb(incremental, "export", str(repo), "--sha", sha)[1]
            == kb(full, "export", str(repo), "--sha", sha)[1]
        )
        head = out.splitlines()[0].split()
        mode, files, parsed, reused = head[2].strip("():"), head[3], head[5].lstrip("("), head[7]
        print(
            f"{version:<10} {sha[:12]} {mode:<12} {files:>6} {parsed:>7} {reused:>7} "
            f"{t_inc:7.1f} {t_full:7.1f}  {same}"
        )
    target = next(p for p in sorted(repo.rglob("*.py")) if "test" not in p.name)
    target.write_text(target.read_text() + "\n\ndef _bench_added():\n    return 1\n")
    git(repo, "commit", "-qam", "one-file change")
    seconds, out = kb(incremental, "index", str(repo), "--gaps", "0")
    print(
        f"one-file commit: {seconds:.2f} s wall (kb index, incl. process start and the Dagster run): "
        f"{out.splitlines()[0]}"
    )


if __name__ == "__main__":
    main()
