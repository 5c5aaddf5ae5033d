"""Pull request text from the GitHub REST API: the only networked step of knowbase (``kb mine --prs``).

Strictly opt-in. ``GITHUB_TOKEN`` is optional (sent as a bearer token over https or to loopback
only, never logged or stored); ``KB_GITHUB_API_URL`` points at GitHub Enterprise or a test server.
Every failure — no GitHub remote, network error, HTTP error, unexpected JSON — is a
``PullFetchError`` the caller counts and degrades on; nothing here retries or raises anything else.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request

from kb_assets.core.errors import KbError
from kb_assets.core.mine.decisions import PullText

_REMOTE = re.compile(
    r"^(?:https?://|ssh://)?(?:[^@/]+@)?github\.com[:/](?P<owner>[^/]+)/(?P<name>[^/]+?)(?:\.git)?/?$"
)
TIMEOUT_S = 10.0


class PullFetchError(KbError):
    """A pull request's text could not be had (the decision is mined without it)."""

    def __init__(self, number: int, reason: str) -> None:
        super().__init__(f"cannot fetch pull request #{number}: {reason}")
        self.number = number
        self.reason = reason


def github_repository(remote_url: str | None) -> tuple[str, str] | None:
    """(owner, name) of a github.com remote URL (https, ssh or scp-like), else None."""
    match = _REMOTE.match(remote_url.strip()) if remote_url else None
    return (match["owner"], match["name"]) if match else None


class PullSource:
    """Fetches pull requests of one GitHub repository."""

    def __init__(self, api_url: str, repository: tuple[str, str] | None, token: str | None) -> None:
        self.api_url = api_url.rstrip("/")
        self.repository = repository
        self._token = token
        self.fetched = 0
        self.failed = 0

    def fetch(self, number: int) -> PullText:
        """Title and body of pull request ``number``; ``PullFetchError`` on any failure."""
        try:
            pull = self._fetch(number)
        except PullFetchError:
            self.failed += 1
            raise
        self.fetched += 1
        return pull

    def _fetch(self, number: int) -> PullText:
        if self.repository is None:
            raise PullFetchError(number, "the repository's origin is not a github.com remote")
        owner, name = self.repository
        url = f"{self.api_url}/repos/{owner}/{name}/pulls/{number}"
        if not url.startswith(("https://", "http://")):
            raise PullFetchError(number, f"KB_GITHUB_API_URL must be http(s), not {self.api_url!r}")
        request = urllib.request.Request(url, headers=self._headers(url))  # noqa: S310 - scheme checked above
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:  # noqa: S310 - scheme checked
                data = json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as err:
            raise PullFetchError(number, f"HTTP {err.code}") from None
        except (urllib.error.URLError, OSError, ValueError) as err:
            raise PullFetchError(number, type(err).__name__) from None
        if not isinstance(data, dict) or not isinstance(data.get("title"), str):
            raise PullFetchError(number, "unexpected reply")
        return PullText(number=number, title=data["title"], body=str(data.get("body") or ""))

    def _headers(self, url: str) -> dict[str, str]:
        headers = {
            "Accept": "application/vnd.github+json",
            "User-Agent": "knowbase",
            "X-GitHub-Api-Version": "2022-11-28",
        }
        if self._token and _private_channel(url):
            headers["Authorization"] = f"Bearer {self._token}"
        return headers


def _private_channel(url: str) -> bool:
    """Whether a token may travel to ``url``: over https, or plain http to this machine only."""
    parts = urllib.parse.urlsplit(url)
    return parts.scheme == "https" or parts.hostname in ("127.0.0.1", "localhost", "::1")


def pull_source(api_url: str, remote: str | None) -> PullSource:
    """The pull request source of a repository whose origin is ``remote``; the optional token is
    read from ``GITHUB_TOKEN`` now, kept in memory only, sent only to ``api_url``."""
    return PullSource(api_url, github_repository(remote), os.environ.get("GITHUB_TOKEN") or None)
