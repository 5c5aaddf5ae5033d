"""The one exception hierarchy of knowbase.

Every expected failure is a ``KbError`` subclass that carries its evidence as typed attributes,
so the CLI can map it to one clear line and an exit code, and tests can assert on the evidence
rather than on message text.
"""

from __future__ import annotations


class KbError(Exception):
    """Base of every error knowbase raises on purpose."""

    exit_code: int = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BadInputError(KbError):
    """The user asked for something that cannot work (exit 2)."""

    exit_code = 2


class NotARepositoryError(BadInputError):
    """The given path is not inside a git work tree or a bare repository."""

    def __init__(self, path: str) -> None:
        super().__init__(
            f"{path} is not a git repository; pass a path inside a git work tree or a bare repository"
        )
        self.path = path


class UnknownRevisionError(BadInputError):
    """A revision does not name a commit of the repository."""

    def __init__(self, revision: str, repo: str) -> None:
        super().__init__(
            f"unknown revision {revision!r} in {repo}; "
            "give a commit-ish such as HEAD, a branch, a tag or a SHA"
        )
        self.revision = revision
        self.repo = repo


class EmptyRepositoryError(BadInputError):
    """The repository has no commits yet, so there is nothing to index."""

    def __init__(self, repo: str) -> None:
        super().__init__(f"{repo} has no commits yet; commit something first, then run kb index")
        self.repo = repo


class NotIndexedError(BadInputError):
    """A commit was asked for that has no published snapshot."""

    def __init__(self, sha: str) -> None:
        super().__init__(f"commit {sha[:12]} is not indexed; run `kb index --sha {sha[:12]}` first")
        self.sha = sha


class StoreUnavailableError(KbError):
    """The knowledge store cannot be reached (exit 3)."""

    exit_code = 3

    def __init__(self, target: str, reason: str) -> None:
        super().__init__(f"cannot reach the knowledge store at {target}: {reason}")
        self.target = target
        self.reason = reason


class SchemaMismatchError(KbError):
    """The store's schema is not the one this program was built for (exit 3)."""

    exit_code = 3

    def __init__(self, found: str | None, expected: str, *, newer: bool) -> None:
        if newer:
            hint = "it was migrated by a newer knowbase; upgrade knowbase"
        else:
            hint = "run `kb migrate` to bring it to head"
        super().__init__(
            f"the store's schema is at {found or 'nothing'}, this program needs {expected}: {hint}"
        )
        self.found = found
        self.expected = expected
        self.newer = newer


class GroundingError(KbError):
    """An artifact was about to be stored without grounding on any code span."""

    def __init__(self, logical_key: str, detail: str = "it has no grounding span") -> None:
        super().__init__(f"refusing to store {logical_key!r}: {detail}")
        self.logical_key = logical_key


class IdentityConflictError(KbError):
    """Two different records claim the same content-addressed id (a determinism bug)."""

    def __init__(self, kind: str, ident: str) -> None:
        super().__init__(f"two different {kind} records share the id {ident}")
        self.kind = kind
        self.ident = ident


class DraftKindError(KbError):
    """An extractor drafted an artifact of a kind other than the one it declares (an extractor bug:
    a snapshot's counts by kind are read from its extractors' entries)."""

    def __init__(self, extractor_id: str, declared: str, drafted: str, logical_key: str) -> None:
        super().__init__(
            f"extractor {extractor_id!r} declares kind {declared!r}"
            f" but drafted {logical_key!r} as {drafted!r}"
        )
        self.extractor_id = extractor_id


class CheckFailedError(KbError):
    """A blocking gate failed, so the snapshot was not published (exit 1)."""

    exit_code = 1

    def __init__(self, failures: list[str]) -> None:
        super().__init__("a blocking check failed, nothing was published: " + "; ".join(failures))
        self.failures = failures


class UnprovenSnapshotError(KbError):
    """The snapshot step was asked to publish staged knowledge its blocking checks did not pass."""

    exit_code = 1

    def __init__(self, sha: str, checks: list[str]) -> None:
        shown = "; ".join(checks[:5]) + (f"; and {len(checks) - 5} more" if len(checks) > 5 else "")
        super().__init__(
            f"refusing to publish {sha[:12]}: its staged knowledge has not passed every blocking "
            f"check ({shown}); index the commit again with its checks "
            f"(`kb index --sha {sha[:12]}`, or the index_commit job)"
        )
        self.sha = sha
        self.checks = checks
