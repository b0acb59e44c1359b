"""Django database connections around jobs: obsolete ones are closed before and after each.

Django's check walks every database alias through a thread-local lookup, which costs more
than the rest of a short job's bookkeeping. Each check, before and after a job, is
therefore skipped when it provably has nothing to close: the last check left no
connection open in this thread, and none was opened since (Django sends
`connection_created` for every new connection, e.g. one the job or a signal receiver
opened).
"""

from __future__ import annotations

from typing import Any

from django.db import connections
from django.db.backends.signals import connection_created


class ConnectionHygiene:
    """`close_old_connections()` around jobs, for the thread that runs them."""

    def __init__(self) -> None:
        #: True while no connection can be open in the job thread since the last check.
        self.idle = False
        # Held weakly (a bound method): a discarded worker leaves no receiver behind.
        connection_created.connect(self._opened)

    def before_job(self) -> None:
        """Close what went stale since the last job (nothing to do if nothing is open)."""
        if not self.idle:
            self.close_old()

    def after_job(self) -> None:
        """Close what the job left unusable or past CONN_MAX_AGE (nothing if nothing is open)."""
        if not self.idle:
            self.close_old()

    def close_old(self) -> None:
        """Django's `close_old_connections()`, noting whether it left a connection open."""
        left_open = False
        for connection in connections.all(initialized_only=True):
            connection.close_if_unusable_or_obsolete()
            left_open = left_open or connection.connection is not None
        self.idle = not left_open

    def _opened(self, sender: Any, **kwargs: Any) -> None:
        """A connection was opened (in any thread: a spurious check is harmless)."""
        self.idle = False
