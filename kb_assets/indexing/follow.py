"""Following branches: which commits of a branch to index next. Shared by the Dagster
``branch_sensor`` and ``kb watch`` so both make exactly the same decisions.

A branch's cursor is the last commit knowbase took from it. New first-parent commits after the
cursor are indexed oldest first; when the branch moved further than ``max_catchup`` commits, or
was force-pushed (the cursor is no longer an ancestor of the tip), only the new tip is indexed —
incrementally against whatever indexed ancestor it has. A branch seen for the first time starts
from its newest indexed commit, or from its tip when nothing on it is indexed yet.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from kb_resources.git.repo import GitRepo

DEFAULT_MAX_CATCHUP = 50


@dataclass(frozen=True, slots=True)
class BranchPlan:
    """What to do for one branch now."""

    branch: str
    tip: str
    cursor: str | None
    to_index: tuple[str, ...]
    reason: str
    """``up_to_date``, ``new_commits``, ``new_branch``, ``jumped`` (more than max_catchup), ``force_push``."""


def plan_branch(
    repo: GitRepo,
    branch: str,
    tip: str,
    cursor: str | None,
    published: Collection[str],
    *,
    max_catchup: int = DEFAULT_MAX_CATCHUP,
) -> BranchPlan:
    """Decide which commits of ``branch`` to index (oldest first), skipping ones already indexed."""
    if cursor is None:
        cursor = _newest_published(repo, tip, published, max_catchup)
        if cursor is None:
            return _plan(branch, tip, None, [tip], published, reason="new_branch")
    if cursor == tip:
        return BranchPlan(branch, tip, cursor, (), "up_to_date")
    if not repo.is_ancestor(cursor, tip):
        return _plan(branch, tip, cursor, [tip], published, reason="force_push")
    new: list[str] = []
    for sha in repo.first_parent_chain(tip, limit=max_catchup + 1):
        if sha == cursor or repo.is_ancestor(sha, cursor):
            new.reverse()
            return _plan(branch, tip, cursor, new, published, reason="new_commits")
        new.append(sha)
    return _plan(branch, tip, cursor, [tip], published, reason="jumped")


def plan_branches(
    repo: GitRepo,
    branches: Iterable[str],
    cursors: Mapping[str, str],
    published: Collection[str],
    *,
    max_catchup: int = DEFAULT_MAX_CATCHUP,
) -> list[BranchPlan]:
    """Plans for every named branch that exists, in name order (unknown names are skipped)."""
    tips = repo.branches()
    return [
        plan_branch(repo, name, tips[name], cursors.get(name), published, max_catchup=max_catchup)
        for name in sorted(set(branches))
        if name in tips
    ]


def watched_branches(repo: GitRepo, requested: Iterable[str]) -> list[str]:
    """The branches to follow: the requested ones (``*`` = every local branch), else the current
    branch (else every local branch of a repository whose HEAD is detached, e.g. a bare mirror)."""
    names = sorted(set(requested))
    if "*" in names:
        return sorted(repo.branches())
    if names:
        return names
    current = repo.current_branch()
    return [current] if current else sorted(repo.branches())


def _newest_published(repo: GitRepo, tip: str, published: Collection[str], limit: int) -> str | None:
    for sha in repo.first_parent_chain(tip, limit=limit + 1):
        if sha in published:
            return sha
    return None


def _plan(
    branch: str, tip: str, cursor: str | None, shas: list[str], published: Collection[str], *, reason: str
) -> BranchPlan:
    todo = tuple(s for s in shas if s not in published)
    return BranchPlan(branch, tip, cursor, todo, reason if todo or reason != "new_commits" else "up_to_date")
