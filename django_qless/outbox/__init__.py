"""The outbox: on-commit enqueues written in the enqueuing transaction, put after it.

A job enqueued inside `transaction.atomic()` becomes a row of `OutboxEntry` in the same
transaction (`commit.defer`); after the commit it is put into Redis and the row deleted
(`delivery.deliver`). A row whose put failed, or never ran, is put by the sweep
(`sweeper.sweep`), run by every worker and by `manage.py qless_outbox`.

The sweep is not imported here: the enqueue path imports `commit`, and the sweep
announces what it puts through the enqueue path, so the two would import each other.
"""

from __future__ import annotations

from .backlog import Backlog, backlog

__all__ = ["Backlog", "backlog"]
