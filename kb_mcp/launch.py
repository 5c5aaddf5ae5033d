"""Opening the store while the server already talks: start-up in well under a second.

``import mcp`` alone costs most of the start-up budget; the store's stack (SQLAlchemy, psycopg,
Alembic's head check, pygit2) would double it. So ``kb serve`` builds the server first, starts
``Opening`` (a worker thread that imports that stack, opens the store read-only, checks that its
schema is at head, then loads the newest snapshot), and answers ``initialize`` meanwhile. Tools
that arrive early wait for the opening. If it fails (not a repository, nothing indexed, schema
not at head, store unreachable) the server refuses to go on: the reason goes to stderr as one
line and the process stops with the CLI's exit code.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from kb_assets.core.errors import KbError
from kb_mcp.context import ServeContext

GIVE_UP_S = 5.0


class Opening:
    """A ``ContextSource`` that opens the ``ServeContext`` on a worker thread."""

    def __init__(self, repo: str, db_url: str | None) -> None:
        self._repo, self._db_url = repo, db_url
        self._done = threading.Event()
        self._context: ServeContext | None = None
        self.error: BaseException | None = None
        self._closing = False
        self._serving = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="kb-open-store", daemon=True)

    def start(self) -> None:
        """Begin opening (returns at once)."""
        self._thread.start()

    @contextmanager
    def serving(self) -> Iterator[None]:
        """Mark the server as running: a failed opening interrupts it only while it runs."""
        with self._lock:
            self._serving = True
        try:
            yield
        finally:
            with self._lock:
                self._serving = False

    def get(self) -> ServeContext:
        """The opened context, once it is open; the opening's error if it failed."""
        self._done.wait()
        if self.error is not None:
            raise self.error
        assert self._context is not None
        return self._context

    def exit_code(self) -> int:
        """0, or the exit code of the error that stopped the opening (printed on stderr); waits a
        little for an opening still under way, so a client that left early still gets the verdict."""
        self._done.wait(GIVE_UP_S)
        if self.error is None:
            return 0
        message = self.error.message if isinstance(self.error, KbError) else repr(self.error)
        print(f"kb serve: {message}", file=sys.stderr, flush=True)
        return self.error.exit_code if isinstance(self.error, KbError) else 1

    def close(self) -> None:
        """Close the context if it was opened."""
        self._closing = True
        if self._context is not None:
            self._context.close()

    def _run(self) -> None:
        """Open (then warm) the context; on failure, stop the server."""
        try:
            from kb_mcp.context import open_context
            from kb_resources.settings import load_settings

            self._context = open_context(self._repo, load_settings().with_db_url(self._db_url))
        except BaseException as exc:  # handed to whoever waits, and it stops the server
            self.error = exc
            self._done.set()
            with self._lock:
                if self._serving:
                    _stop_server(exc.exit_code if isinstance(exc, KbError) else 1)
            return
        self._done.set()
        try:
            self._context.warm()
        except Exception as exc:  # the first request will load the snapshot (and report) instead
            if not self._closing:
                print(
                    f"kb serve: could not preload the newest snapshot: {exc!r}", file=sys.stderr, flush=True
                )


def _stop_server(code: int) -> None:
    """Interrupt the main thread's event loop; exit hard if it does not stop in time."""
    os.kill(os.getpid(), signal.SIGINT)
    timer = threading.Timer(GIVE_UP_S, os._exit, args=(code,))
    timer.daemon = True
    timer.start()
