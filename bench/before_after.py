"""Before and after: the same figures as ``bench/run.py`` for an older revision of knowbase and for
this checkout, interleaved on the same machine (its speed drifts by a quarter within an hour, so
figures from different times do not compare).

    python bench/before_after.py --base REV [--rounds 2] [--work DIR] [--package django==5.2.19]
                                 [--skip-watch]

``REV`` is checked out into a temporary git worktree of this repository (removed at the end). Each
round runs ``before`` and then ``after``, each on a fresh embedded store: the full index of the
corpus, a one-file commit on top of it (the same commit for both: a branch ``kb-before-after``
holds it), and, unless ``--skip-watch``, a warm ``kb watch`` taking commits on that branch (reset
before each watch, so both see the same history). Which code a ``kb`` process runs is decided by
``PYTHONPATH`` and by running from a neutral directory: ``python -m`` puts the current directory
first on ``sys.path``, so an A/B started inside one checkout runs that checkout twice. Each
variant's ``kb_assets`` location is printed and checked before each of its rounds.
Prints figures; asserts nothing about speed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from run import ROOT, corpus, git, kb, measure, one_file_commit, warm_watch_latency

BRANCH = "kb-before-after"


@contextmanager
def worktree(rev: str) -> Iterator[Path]:
    """``rev`` of this repository checked out in a temporary directory."""
    place = Path(tempfile.mkdtemp(prefix="kb-before-")) / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(place), rev], check=True)
    try:
        yield place
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(place)], check=False)
        shutil.rmtree(place.parent, ignore_errors=True)


def code_env(tree: Path, home: Path) -> dict[str, str]:
    """The environment of a ``kb`` process running the code of ``tree`` on the store at ``home``."""
    env = {**os.environ, "PYTHONPATH": str(tree), "KB_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    env.pop("KB_DB_URL", None)
    return env


def check_code(label: str, tree: Path, env: dict[str, str]) -> None:
    """Fail unless a process started with ``env``, as the measured ones are, imports ``kb_assets``
    from ``tree``."""
    found = subprocess.run(
        [sys.executable, "-c", "import kb_assets; print(kb_assets.__file__)"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    print(f"{label}: kb_assets from {found}")
    if not Path(found).resolve().is_relative_to(tree.resolve()):
        raise SystemExit(f"{label} would not run the code of {tree}")


def _script_lines(script: str, args: list[str], env: dict[str, str]) -> list[str]:
    """The non-empty output lines of ``bench/<script>`` (or, if it failed, its last error line),
    run with the variant's own code (a read-only open of the store refuses a schema other than
    that code's head)."""
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / script), *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        return [f"{script} failed: " + " ".join(out.stderr.strip().splitlines()[-1:])]
    return [line.strip() for line in out.stdout.splitlines() if line.strip()]


def slowest_steps(repo: Path, env: dict[str, str]) -> str:
    """The newest run's slowest steps, as ``bench/steps.py`` prints them."""
    return " | ".join(_script_lines("steps.py", [str(repo), "--top", "4"], env))


def store_size(repo: Path, env: dict[str, str]) -> str:
    """The store's size, as ``bench/store_size.py`` prints it."""
    return " ".join(_script_lines("store_size.py", [str(repo)], env)[-1:])


def one_round(label: str, tree: Path, repo: Path, shas: tuple[str, str], work: Path, *, watch: bool) -> None:
    """Full index, one-file commit and (optionally) warm watch of one variant on a fresh store."""
    home = work / f"home-{label}"
    shutil.rmtree(home, ignore_errors=True)
    env = code_env(tree, home)
    check_code(label, tree, env)
    full, one = shas
    try:
        measure(kb("migrate", str(repo)), env)
        for what, sha in (("full index", full), ("one-file commit, cold kb index", one)):
            figures = measure(kb("index", str(repo), "--sha", sha, "--gaps", "0"), env)
            print(figures.line(f"{label}: {what}"), flush=True)
            print("   ", slowest_steps(repo, env), flush=True)
            print("   ", store_size(repo, env), flush=True)
        if watch:
            git(repo, "checkout", "-q", BRANCH)
            git(repo, "reset", "-q", "--hard", one)
            warm = warm_watch_latency(repo, env, 1000)
            shown = "did not publish" if warm is None else ", ".join(f"{s:.2f}" for s in warm.seconds) + " s"
            rss = "" if warm is None else " (RSS " + ", ".join(f"{m:.0f}" for m in warm.rss_mib) + " MiB)"
            print(f"{label}: one-file commit, warm kb watch  {shown}{rss}", flush=True)
            if warm is not None and (cpu := warm.cpu_line()):
                print(f"{label}: {cpu}", flush=True)
            print("   ", store_size(repo, env), flush=True)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the revision measured as 'before'")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--work", type=Path, default=Path.home() / ".cache" / "knowbase-bench")
    parser.add_argument("--package", default="django==5.2.19")
    parser.add_argument("--skip-watch", action="store_true")
    args = parser.parse_args()
    work: Path = args.work.resolve()
    repo = corpus(work, args.package)
    neutral = Path(tempfile.mkdtemp(prefix="kb-ab-cwd-"))
    os.chdir(neutral)  # not inside either checkout (see the module docstring)
    full = git(repo, "rev-list", "--max-parents=0", "HEAD").splitlines()[0]
    git(repo, "checkout", "-q", "-B", BRANCH, full)
    one = one_file_commit(repo, 999)
    print(f"corpus {args.package}: full index of {full[:12]}, one-file commit {one[:12]} (branch {BRANCH})")
    try:
        with worktree(args.base) as before:
            variants = (("before", before), ("after", ROOT))
            for n in range(args.rounds):
                print(f"round {n + 1}", flush=True)
                for label, tree in variants:
                    one_round(label, tree, repo, (full, one), work, watch=not args.skip_watch)
    finally:
        git(repo, "checkout", "-q", "main")  # where `bench/run.py` expects the corpus
        shutil.rmtree(neutral, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
