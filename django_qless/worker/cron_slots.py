"""Cron slots put by the worker: no scheduler process, every worker is one more writer.

From the monitor thread, every `INTERVAL` seconds, one ZRANGEBYSCORE on the cron index
asks for the schedules due within `core.crons.LEAD`; only those are read and their due
slot jobs put (`core.crons.CronStore`), each with a jid of its own slot, so any number of
workers put it once. What a worker follows is what Redis holds, so a schedule pruned or
changed by `qless_recur` is honoured at once by workers running older code.
"""

from __future__ import annotations

import logging
import time

import redis

from ..core import Client, QlessError
from ..core.crons import CronStore
from ..cron import CronError
from .log_fields import jid_fields

logger = logging.getLogger("django_qless.worker")

#: Seconds between two looks at the cron index (well within the lead time).
INTERVAL = 5.0


class CronSlots:
    """Puts due cron slot jobs now and then; never raises into the monitor thread."""

    def __init__(self, client: Client, interval: float = INTERVAL) -> None:
        self.store = CronStore(client)
        self.interval = interval
        self._next = 0.0

    def maybe_run(self) -> None:
        """Look at the index when `interval` has passed since the last look."""
        now = time.monotonic()
        if now < self._next:
            return
        self._next = now + self.interval
        self.run()

    def run(self) -> None:
        """Put the due slot jobs now (logged, never raised)."""
        try:
            for outcome in self.store.create_due():
                if outcome.created:
                    logger.info("qless worker %s: cron slot job %s put",
                                self.store.client.worker_name, outcome.jid,
                                extra=jid_fields(outcome.jid))
        except (redis.RedisError, QlessError, CronError, OSError) as exc:
            # The next look (here or on any other worker) puts what this one could not.
            logger.warning("qless worker %s: cron slots not put: %s",
                           self.store.client.worker_name, exc)
