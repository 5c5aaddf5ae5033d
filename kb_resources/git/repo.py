"""The single choke point between knowbase and git.

Everything knowbase knows about a repository is read here, through pygit2, straight from the object
database: nothing is ever checked out, bare repositories and work trees behave identically, and a
symlink is reported as such but its target is never read (see ``kb_resources.git.tree``).

Thread safety: a ``pygit2.Repository`` must not be used by two threads at once, so ``GitRepo``
opens one per thread on first use (cheap: a few file reads). All methods are therefore safe to call
from several threads; a ``GitRepo`` also pickles (by its git directory) for process pools.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pygit2

from kb_assets.core.errors import EmptyRepositoryError, NotARepositoryError, UnknownRevisionError
from kb_assets.core.models import FileEntry, Gap
from kb_resources.git.location import common_dir, discover_git_dir, repo_key
from kb_resources.git.tree import TreeListing, decode_path, is_python_path, list_python_files

_FULL_SHA = re.compile(r"[0-9a-f]{40}")
_REV_BASE = re.compile(r"(.*?)(?:[~^]|@\{|$)", re.DOTALL)
_BRANCH_PREFIX = "refs/heads/"


@dataclass(frozen=True, slots=True)
class CommitInfo:
    """What knowbase records about a commit (``commit_ref``), decoded once, here."""

    sha: str
    tree_id: str
    parents: tuple[str, ...]
    committed_at: datetime
    author: str
    message: str


LISTINGS_KEPT = 4
"""Tree listings this process keeps (oldest dropped first): a run needs one commit and its base."""

_listings: dict[str, TreeListing] = {}
"""Commit id -> its tree's listing, for every ``GitRepo`` of the process: a commit id names its
tree exactly, whichever repository it is read from, and an index run opens the repository twice
(the command's session, to decide whether to verify inline; the pipeline's resource), each of
which listed Django's tree (~0.1-0.2 s) for the same commit."""
_listings_lock = threading.Lock()


class GitRepo:
    """A git repository, read-only, addressed by commit sha."""

    root: Path
    git_dir: Path
    is_bare: bool

    def __init__(self, git_dir: str) -> None:
        """Open the repository whose git directory is ``git_dir``; prefer ``GitRepo.open``."""
        self._git_dir = git_dir
        self._local = threading.local()
        try:
            repo = pygit2.Repository(git_dir)
        except (pygit2.GitError, OSError, ValueError) as exc:  # e.g. "not owned by current user"
            raise NotARepositoryError(git_dir) from exc
        self._local.repo = repo
        self.git_dir = Path(git_dir).resolve()
        self.is_bare = repo.is_bare
        self.root = Path(repo.workdir).resolve() if repo.workdir and not repo.is_bare else self.git_dir
        self._key = repo_key(common_dir(self.git_dir))

    @classmethod
    def open(cls, path: str | Path) -> GitRepo:
        """Open the repository containing ``path`` (a work tree path, a git dir or a bare repo)."""
        return cls(discover_git_dir(path))

    def __reduce__(self) -> tuple[type[GitRepo], tuple[str]]:
        """Pickle by git directory: each process reopens its own pygit2 handle."""
        return (GitRepo, (self._git_dir,))

    def __repr__(self) -> str:
        """Show which repository this is."""
        return f"GitRepo({str(self.root)!r})"

    @property
    def _repo(self) -> pygit2.Repository:
        """This thread's own pygit2 handle."""
        repo: pygit2.Repository | None = getattr(self._local, "repo", None)
        if repo is None:
            repo = pygit2.Repository(self._git_dir)
            self._local.repo = repo
        return repo

    def key(self) -> str:
        """The stable store key of this repository, shared by every path and worktree of it."""
        return self._key

    def resolve(self, rev: str) -> str:
        """Turn any commit-ish (HEAD, branch, tag, short sha, HEAD~2, sha^) into a full commit sha."""
        repo = self._repo
        if "\x00" in rev or not rev.strip():
            raise UnknownRevisionError(rev, str(self.root))
        try:
            obj = repo.revparse_single(rev)
            return str(obj.peel(pygit2.Commit).id)
        except (KeyError, ValueError, pygit2.GitError) as exc:
            if repo.head_is_unborn and self._is_head_ish(repo, rev):
                raise EmptyRepositoryError(str(self.root)) from exc
            raise UnknownRevisionError(rev, str(self.root)) from exc

    def commit_info(self, sha: str) -> CommitInfo:
        """Everything ``commit_ref`` stores about one commit."""
        commit = self._commit(sha)
        encoding = commit.message_encoding or "utf-8"
        offset = timezone(timedelta(minutes=commit.commit_time_offset))
        author = commit.author
        name = _decode(author.raw_name, encoding)
        email = _decode(author.raw_email, encoding)
        return CommitInfo(
            sha=str(commit.id),
            tree_id=str(commit.tree_id),
            parents=tuple(str(parent) for parent in commit.parent_ids),
            committed_at=datetime.fromtimestamp(commit.commit_time, tz=offset),
            author=f"{name} <{email}>",
            message=_decode(commit.raw_message, encoding),
        )

    def tree_listing(self, sha: str) -> TreeListing:
        """The commit's `.py` entries and the gaps of entries that could not be listed (bad paths).

        A commit's tree never changes, and one index run asks for it about ten times (ingest, the
        reproducibility checks' size test, the oracles), which on Django is ~0.1 s each: the
        listings of the last few commits are kept, for every ``GitRepo`` of the process."""
        commit = self._commit(sha)
        full = str(commit.id)
        with _listings_lock:
            known = _listings.get(full)
        if known is not None:
            return known
        listing = list_python_files(self._repo.odb, commit.tree)
        with _listings_lock:
            _listings[full] = listing
            while len(_listings) > LISTINGS_KEPT:
                del _listings[next(iter(_listings))]
        return listing

    def python_files(self, sha: str) -> tuple[FileEntry, ...]:
        """Every `.py` entry of the commit's tree, sorted by path; see ``tree_listing`` for the gaps."""
        return self.tree_listing(sha).files

    def tree_gaps(self, sha: str) -> tuple[Gap, ...]:
        """The `.py` entries of the commit that ``python_files`` cannot list (undecodable paths, ...)."""
        return self.tree_listing(sha).gaps

    def read_blob(self, blob_id: str) -> bytes:
        """The raw bytes of a blob, read from the object database (never from the work tree)."""
        try:
            kind, data = self._repo.odb.read(blob_id)
        except (KeyError, ValueError, pygit2.GitError) as exc:
            raise UnknownRevisionError(blob_id, str(self.root)) from exc
        if kind != pygit2.enums.ObjectType.BLOB:
            raise UnknownRevisionError(blob_id, str(self.root))
        return data

    def changed_paths(self, base_sha: str, sha: str) -> frozenset[str]:
        """The `.py` paths added, modified, deleted or renamed (both names) from ``base_sha`` to ``sha``."""
        base, head = self._commit(base_sha), self._commit(sha)
        diff = base.tree.diff_to_tree(head.tree)
        changed: set[str] = set()
        for delta in diff.deltas:
            for raw in (delta.old_file.raw_path, delta.new_file.raw_path):
                path = decode_path(raw) if is_python_path(raw) else None
                if path is not None:
                    changed.add(path)
        return frozenset(changed)

    def first_parent_chain(self, sha: str, *, limit: int) -> list[str]:
        """``sha``, its first parent, its first parent's first parent, ... (at most ``limit`` shas)."""
        chain: list[str] = []
        commit: pygit2.Commit | None = self._commit(sha) if limit > 0 else None
        while commit is not None and len(chain) < limit:
            chain.append(str(commit.id))
            parents = commit.parent_ids
            commit = self._commit(str(parents[0])) if parents and len(chain) < limit else None
        return chain

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        """Whether ``ancestor`` is reachable from ``descendant`` (a commit is its own ancestor)."""
        older, newer = self._commit(ancestor).id, self._commit(descendant).id
        return older == newer or self._repo.descendant_of(newer, older)

    def branches(self) -> dict[str, str]:
        """Local branch name -> tip sha (branches whose name is not UTF-8 or tip is no commit are skipped)."""
        repo = self._repo
        out: dict[str, str] = {}
        for raw in sorted(repo.raw_listall_references()):
            name = decode_path(raw)
            if name is None or not name.startswith(_BRANCH_PREFIX):
                continue
            try:
                tip = repo.lookup_reference(name).peel(pygit2.Commit)
            except (KeyError, ValueError, pygit2.GitError):
                continue
            out[name.removeprefix(_BRANCH_PREFIX)] = str(tip.id)
        return out

    def current_branch(self) -> str | None:
        """The branch HEAD is on, or None when HEAD is detached or unborn."""
        repo = self._repo
        if repo.head_is_unborn or repo.head_is_detached:
            return None
        name = repo.head.name
        return name.removeprefix(_BRANCH_PREFIX) if name.startswith(_BRANCH_PREFIX) else None

    def _commit(self, rev: str) -> pygit2.Commit:
        """The commit named by a full sha (fast path) or by any commit-ish."""
        obj = self._repo.get(rev) if _FULL_SHA.fullmatch(rev) else None
        if not isinstance(obj, pygit2.Commit):
            obj = self._repo.get(self.resolve(rev))
        if not isinstance(obj, pygit2.Commit):  # pragma: no cover - resolve only returns commits
            raise UnknownRevisionError(rev, str(self.root))
        return obj

    @staticmethod
    def _is_head_ish(repo: pygit2.Repository, rev: str) -> bool:
        """Whether ``rev`` can only mean the (unborn) HEAD: HEAD, @, HEAD~2, the unborn branch, ..."""
        match = _REV_BASE.match(rev)
        base = match.group(1) if match else rev
        target = repo.lookup_reference("HEAD").target
        unborn = target if isinstance(target, str) else ""
        names = {"HEAD", "@", unborn, unborn.removeprefix(_BRANCH_PREFIX)}
        return base in names - {""}


def _decode(raw: bytes, encoding: str) -> str:
    """Decode commit text in its declared encoding, never failing on bad bytes."""
    try:
        return raw.decode(encoding, "replace")
    except LookupError:  # an encoding name Python does not know
        return raw.decode("utf-8", "replace")
