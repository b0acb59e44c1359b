"""The outbox: on-commit enqueues written in the enqueuing transaction, put after it.

A job enqueued inside `transaction.atomic()` becomes a row of `OutboxEntry` in the same
transaction (`commit.defer`); after the commit it is put into Redis and the row deleted
(`delivery.deliver`). A row whose put failed, or never ran, is put by the sweep
(`sweeper`), run by every worker and by `manage.py qless_outbox`.
"""

from __future__ import annotations

from .backlog import Backlog, backlog
from .sweeper import SweepReport, sweep

__all__ = ["Backlog", "SweepReport", "backlog", "sweep"]
