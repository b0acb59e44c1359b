"""A burst worker's look at the outbox before it calls its queues empty.

A burst worker may stop long before its sweeping thread's next pass, so when its queues
are empty it sweeps in its own thread: the rows it puts become jobs it pops and runs. It
also waits for the rows written before it started that are not due yet (younger than
`QLESS['OUTBOX_SWEEP_AGE']`: their commit may still put them), at most that age plus a
sweep lock's life, so a burst started right after a failed commit-time put delivers it.
Rows written after its start are left to the next sweep.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

import redis
from django.db import DatabaseError, connections
from django.db.models import Min
from django.utils import timezone

from ..conf import get_settings
from ..core import QlessError
from .models import OutboxEntry
from .sweeper import LOCK_TTL, sweep
from .tables import migrated, outbox_databases

logger = logging.getLogger("django_qless.outbox")

#: Seconds between two looks while another sweeper holds the lock.
BUSY_PAUSE = 0.2


class BurstDrain:
    """What a burst worker owes the outbox: the rows written before it started."""

    def __init__(self) -> None:
        #: Rows written up to this time are this worker's to put.
        self.started = timezone.now()
        self._databases: list[str] | None = None

    def step(self) -> float | None:
        """Sweep once; None when the outbox holds nothing more for this worker, else the
        seconds to wait before popping again (0: jobs were put or found)."""
        outbox = get_settings().outbox
        if not outbox.enabled:
            return None
        try:
            databases = self._usable()
            report = sweep(outbox, databases)
            if report.put or report.found:
                return 0.0
            oldest = self._oldest_waiting(databases)
        except (DatabaseError, redis.RedisError, QlessError) as exc:
            logger.warning("qless outbox: burst sweep failed (%s: %s); rows stay for the "
                           "next sweep", type(exc).__name__, exc)
            return None
        except Exception:
            # A bug here must not stop the burst worker's own shutdown.
            logger.exception("qless outbox: burst sweep failed; rows stay for the next sweep")
            return None
        if report.failed:
            return None  # the sweep logged what stopped it
        if oldest is None and not report.busy:
            return None
        now = timezone.now()
        age = timedelta(seconds=outbox.sweep_age)
        if now >= self.started + age + timedelta(seconds=LOCK_TTL):
            if oldest is not None:
                logger.warning("qless outbox: rows written before this burst worker started "
                               "are still in the outbox (oldest from %s); left for the next "
                               "sweep", oldest.isoformat())
            return None
        if report.busy or oldest is None:
            # Another sweeper is putting them, or has just put them (no row left): the
            # worker pops again before it calls its queues empty.
            return BUSY_PAUSE
        return max((oldest + age - now).total_seconds(), 0.0) + 0.01

    def _usable(self) -> list[str]:
        """The outbox databases with the table, outside an open transaction (whose rows
        are not committed: nothing to put)."""
        if self._databases is None:
            self._databases = [alias for alias in outbox_databases() if migrated(alias)]
        return [alias for alias in self._databases
                if not connections[alias].in_atomic_block]

    def _oldest_waiting(self, databases: list[str]) -> datetime | None:
        """When the oldest row written before this worker started was written (None: none
        is left)."""
        found = [OutboxEntry.objects.using(alias).filter(created__lte=self.started)
                 .aggregate(oldest=Min("created"))["oldest"] for alias in databases]
        return min((when for when in found if when is not None), default=None)
