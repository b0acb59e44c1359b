"""Whether `qless_recur` keeps a recurring template in sync, and from which declaration."""

from __future__ import annotations

from dataclasses import dataclass

from ..core import RecurringJob
from ..recurring.declarations import Declared, collect
from ..recurring.plan import managed


@dataclass(frozen=True)
class Managed:
    """A template that carries the managed tag, and the schedule declaring it, if any."""

    #: The declaration a sync writes back (None: no longer declared, a sync leaves it alone).
    declared: Declared | None


def managed_by_sync(job: RecurringJob) -> Managed | None:
    """How the sync treats the template: None when it is not managed (edits stay)."""
    if not managed(job.template):
        return None
    # The declarations of this process's settings: the same ones its `qless_recur` syncs.
    found = next((d for d in collect().items if d.jid == job.jid and d.cron is None), None)
    return Managed(found)
