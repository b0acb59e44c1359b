"""Cron slot jobs popped later than their schedule's catch-up policy allows: not run.

Such a job is completed without calling its function, after a `skipped` history entry
saying why (`core.late_slots`), so the admin and `qless` clients show what happened to it.
"""

from __future__ import annotations

import logging

import redis

from ..core import Job, LockLostError, QlessError
from ..core.late_slots import SKIPPED, LateSlots, slot_ref
from ..cron import CronError
from .log_fields import job_fields
from .report import Outcome

logger = logging.getLogger("django_qless.worker")


class LateSlotGate:
    """Stops the late slot jobs of one worker before they start."""

    def __init__(self, worker_name: str) -> None:
        self.worker_name = worker_name
        self._judges: dict[int, LateSlots] = {}

    def check(self, job: Job) -> Outcome | None:
        """`Outcome.SKIPPED` once a too-late slot job is completed unrun; None: run it."""
        if slot_ref(job.jid) is None:
            return None  # not a cron slot job (most jobs): nothing to read
        try:
            reason = self._judge(job).reason(job)
        except (redis.RedisError, QlessError, CronError) as exc:
            # Cannot tell: run it, as every slot job ran before the policy was applied here.
            logger.warning("qless worker %s: could not check cron slot job %s (%s); running it",
                           self.worker_name, job.jid, exc, extra=job_fields(job))
            return None
        if reason is None:
            return None
        try:
            job.log(SKIPPED, {"worker": self.worker_name, "reason": reason})
            job.complete()
        except LockLostError as lost:
            logger.info("qless worker %s: late cron slot job %s lost its lock: %s",
                        self.worker_name, job.jid, lost.message, extra=job_fields(job))
            return Outcome.LOCK_LOST
        except redis.RedisError as exc:
            logger.warning("qless worker %s: could not complete late cron slot job %s (%s); "
                           "its lock will expire", self.worker_name, job.jid, exc,
                           extra=job_fields(job))
            return Outcome.UNREPORTED
        logger.info("qless worker %s: job %s not run: %s", self.worker_name, job.jid, reason,
                    extra=job_fields(job))
        return Outcome.SKIPPED

    def _judge(self, job: Job) -> LateSlots:
        """One judge per client (the worker's, in practice)."""
        judge = self._judges.get(id(job.client))
        if judge is None:
            judge = self._judges[id(job.client)] = LateSlots(job.client)
        return judge
