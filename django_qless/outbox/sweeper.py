"""The sweep: puts rows whose commit-time put never happened, one sweeper per Redis.

A row older than `QLESS['OUTBOX_SWEEP_AGE']` was not put at its commit (Redis was
unreachable, or the process died in between). The sweep puts it with `put_if_absent`
policy "any", so a job that reached Redis after all, even completed since, is neither
replaced nor run again; then it deletes the row. Workers sweep as they start,
then every `QLESS['OUTBOX_SWEEP_INTERVAL']` seconds, in a thread of their own (`Sweeper`);
a burst worker also sweeps before it calls its queues empty (`drain`);
`manage.py qless_outbox` sweeps once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import timedelta

import redis
from django.db import DatabaseError, close_old_connections
from django.db.models import QuerySet
from django.utils import timezone

from ..conf import get_settings
from ..conf.schema import OutboxSettings
from ..connection import get_client
from ..core import QlessError
from ..core.sweep_lock import SweepLock
from ..enqueue import announce
from .delivery import SWEEP_POLICY, deliver
from .entries import submission_of
from .models import OutboxEntry
from .tables import migrated, outbox_databases

logger = logging.getLogger("django_qless.outbox")

#: Longest a sweeper holds a Redis' lock: far above a pass, short after a crash.
LOCK_TTL = 30.0


@dataclass
class SweepReport:
    """What one sweep did."""

    #: Jids put by the sweep.
    put: list[str] = field(default_factory=list)
    #: Jids whose job was in Redis already: their rows were deleted, the jobs left alone.
    found: list[str] = field(default_factory=list)
    #: Rows left after an error (Redis unreachable, full...), for the next sweep.
    failed: int = 0
    #: Connections skipped because another sweeper held their lock.
    busy: int = 0


def sweep(outbox: OutboxSettings, databases: Iterable[str] | None = None) -> SweepReport:
    """Put every row older than the sweep age, pass after pass of `batch_size` rows."""
    report = SweepReport()
    for alias in outbox_databases() if databases is None else databases:
        while sweep_pass(alias, outbox, report):
            pass
    return report


def sweep_pass(alias: str, outbox: OutboxSettings, report: SweepReport) -> bool:
    """One batch of one database; True when a full batch was put and deleted (there may
    be more)."""
    # The query an empty outbox costs: nothing else happens then.
    due = _due(alias, outbox)
    connections = list(dict.fromkeys(due.values_list("connection", flat=True)
                                     .order_by("pk")[:outbox.batch_size]))
    done = sum(sweep_connection(alias, connection, outbox, report)
               for connection in connections)
    return done >= outbox.batch_size


def sweep_connection(alias: str, connection: str, outbox: OutboxSettings,
                     report: SweepReport) -> int:
    """Put one connection's due rows under its Redis' sweep lock; returns the rows deleted."""
    try:
        lock = SweepLock(get_client(connection).redis, LOCK_TTL)
        if not lock.acquire():
            report.busy += 1
            return 0
    except (redis.RedisError, QlessError) as exc:
        logger.warning("qless outbox: cannot sweep connection %r (%s)", connection, exc)
        report.failed += 1
        return 0
    try:
        # Read under the lock: rows another sweeper just put are gone by now.
        rows = list(_due(alias, outbox).filter(connection=connection)
                    .order_by("pk")[:outbox.batch_size])
        return sweep_rows(alias, rows, report)
    finally:
        try:
            lock.release()
        except redis.RedisError:
            pass  # it expires on its own


def sweep_rows(alias: str, rows: list[OutboxEntry], report: SweepReport) -> int:
    """Put rows in order until one fails (the rest wait for the next sweep); returns the
    rows deleted."""
    deleted = 0
    for done, row in enumerate(rows):
        try:
            delivery = deliver(row, alias, policy=SWEEP_POLICY)
        except (redis.RedisError, QlessError) as exc:
            logger.warning("qless outbox: sweep stopped at job %s (%s: %s); %s rows stay",
                           row.jid, type(exc).__name__, exc, len(rows) - done)
            report.failed += len(rows) - done
            return deleted
        deleted += delivery.deleted
        if delivery.created:
            report.put.append(row.jid)
            announce.swept(submission_of(row, SWEEP_POLICY), row.connection, row.task_backend,
                           delivery.delay)
        else:
            report.found.append(row.jid)
    return deleted


def _due(alias: str, outbox: OutboxSettings) -> QuerySet[OutboxEntry]:
    """Rows old enough that their commit-time put is not coming."""
    cutoff = timezone.now() - timedelta(seconds=outbox.sweep_age)
    return OutboxEntry.objects.using(alias).filter(created__lte=cutoff)


class Sweeper(threading.Thread):
    """A worker's sweeping thread: a sweep at start, then every `sweep_interval` seconds
    until halted."""

    def __init__(self, databases: Iterable[str] | None = None) -> None:
        super().__init__(name="qless-outbox-sweeper", daemon=True)
        #: Database aliases to sweep (None: every outbox database with the table).
        self.databases = None if databases is None else list(databases)
        self._halt = threading.Event()

    def run(self) -> None:
        """Sweep the migrated databases until halted (nothing when the outbox is off)."""
        outbox = get_settings().outbox
        if not outbox.enabled:
            return
        databases = self.databases
        # The first pass at once: a worker that stops soon (a burst) still sweeps.
        while not self._halt.is_set():
            close_old_connections()
            try:
                if databases is None:
                    databases = self._usable_databases()
                sweep(outbox, databases)
            except (DatabaseError, redis.RedisError) as exc:
                logger.warning("qless outbox: sweep failed (%s: %s); trying again in %ss",
                               type(exc).__name__, exc, outbox.sweep_interval)
            except Exception:
                logger.exception("qless outbox: sweep failed")
            finally:
                close_old_connections()
            self._halt.wait(outbox.sweep_interval)

    def halt(self, timeout: float = 5.0) -> None:
        """Stop after the current sweep."""
        self._halt.set()
        if self.is_alive():
            self.join(timeout)

    @staticmethod
    def _usable_databases() -> list[str]:
        """The outbox databases with the table; the others are named once in a warning."""
        usable = []
        for alias in outbox_databases():
            if migrated(alias):
                usable.append(alias)
            else:
                logger.warning("qless outbox: no table %s in database %r (run manage.py "
                               "migrate); not swept", OutboxEntry._meta.db_table, alias)
        return usable
