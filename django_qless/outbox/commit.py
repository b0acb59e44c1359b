"""On-commit enqueue through the outbox: the row in the transaction, the put after it."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable

import redis
from django.db import IntegrityError, transaction

from ..core import QlessError
from .delivery import Delivery, deliver
from .models import OutboxEntry
from .tables import ready

logger = logging.getLogger("django_qless.outbox")

#: What the enqueuer does once its job is in Redis (send its signal).
Announce = Callable[[Delivery], None]


def defer(entry: OutboxEntry, using: str, announce: Announce) -> bool:
    """Write the row in the current transaction; put it into Redis once that commits.

    False, with nothing written, when the database has no outbox table (not migrated).
    """
    if not ready(using):
        return False
    store(entry, using)
    transaction.on_commit(functools.partial(put_after_commit, entry, using, announce),
                          using=using)
    return True


def store(entry: OutboxEntry, using: str) -> None:
    """Insert the row; the same jid enqueued again before it was put rewrites it."""
    try:
        # A savepoint, so a clash leaves the caller's transaction usable (PostgreSQL).
        with transaction.atomic(using=using):
            entry.save(using=using, force_insert=True)
    except IntegrityError:
        # The newest put of a jid wins, as it would in Redis.
        fields = {field.attname: getattr(entry, field.attname)
                  for field in entry._meta.concrete_fields if not field.primary_key}
        rows = OutboxEntry.objects.using(using).filter(jid=entry.jid)
        rows.update(**fields)
        entry.pk = rows.values_list("pk", flat=True).get()


def put_after_commit(entry: OutboxEntry, using: str, announce: Announce) -> None:
    """The commit's put: never raises, so the transaction's later puts still run."""
    try:
        delivery = deliver(entry, using, policy=entry.unique or None)
    except (redis.RedisError, QlessError) as exc:
        logger.warning("qless outbox: job %s (%s) not put at commit (%s: %s); its row stays "
                       "for the sweep", entry.jid, entry.klass, type(exc).__name__, exc)
        return
    except Exception:
        logger.exception("qless outbox: job %s (%s) not put at commit; its row stays for "
                         "the sweep", entry.jid, entry.klass)
        return
    if delivery.created:
        announce(delivery)
