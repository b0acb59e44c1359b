"""On-commit enqueue through the outbox: the row in the transaction, the put after it."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence

import redis
from django.db import IntegrityError, transaction
from django.utils import timezone

from ..conf import get_settings
from ..core import QlessError
from .delivery import SWEEP_POLICY, Delivery, deliver, deliver_many
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


def defer_many(entries: Sequence[OutboxEntry], using: str,
               announces: Sequence[Announce]) -> bool:
    """`defer` for the rows of one bulk enqueue: every row now, one on-commit put of all
    (`announces[i]` for `entries[i]`); False, nothing written, without an outbox table."""
    if not ready(using):
        return False
    store_many(entries, using)
    transaction.on_commit(functools.partial(put_many_after_commit, entries, using, announces),
                          using=using)
    return True


def store_many(entries: Sequence[OutboxEntry], using: str) -> None:
    """Insert the rows in one statement; when a jid has a row already (enqueued again in
    this transaction, or twice in one bulk), row by row as `store` does."""
    try:
        # A savepoint, so a clash leaves the caller's transaction usable (PostgreSQL).
        with transaction.atomic(using=using):
            OutboxEntry.objects.using(using).bulk_create(entries)
    except IntegrityError:
        for entry in entries:
            entry.pk = None  # nothing of the statement was kept
            store(entry, using)
        return
    if any(entry.pk is None for entry in entries):  # a database that returns no new ids
        ids = dict(OutboxEntry.objects.using(using)
                   .filter(jid__in=[entry.jid for entry in entries]).values_list("jid", "pk"))
        for entry in entries:
            entry.pk = ids[entry.jid]


#: Inserts `store` tries for a jid whose clashing row keeps vanishing before the update.
STORE_ATTEMPTS = 5


def store(entry: OutboxEntry, using: str) -> None:
    """Insert the row; the same jid enqueued again before it was put rewrites it."""
    for attempt in range(STORE_ATTEMPTS):
        try:
            # A savepoint, so a clash leaves the caller's transaction usable (PostgreSQL).
            with transaction.atomic(using=using):
                entry.save(using=using, force_insert=True)
            return
        except IntegrityError:
            if attempt == STORE_ATTEMPTS - 1:
                raise
        # The newest put of a jid wins, as it would in Redis.
        fields = {field.attname: getattr(entry, field.attname)
                  for field in entry._meta.concrete_fields if not field.primary_key}
        rows = OutboxEntry.objects.using(using).filter(jid=entry.jid)
        if rows.update(**fields):
            # The update holds the row's lock until this transaction ends: it stays.
            entry.pk = rows.values_list("pk", flat=True).get()
            return
        # The row clashed with belonged to another transaction that has committed since,
        # and its put deleted it (PostgreSQL runs the two side by side): insert again.


def commit_policy(entry: OutboxEntry, sweep_age: float) -> str | None:
    """The commit's put: plain (None) as outside a transaction, or the job's unique policy.

    A row older than the sweep age when its transaction commits may be swept at that very
    moment; a plain put after the sweep's would replace the job the sweep just put (and
    run it twice), so such a row is put only if absent, as the sweep does.
    """
    if entry.unique:
        return entry.unique
    age = (timezone.now() - entry.created).total_seconds()
    return SWEEP_POLICY if age >= sweep_age else None


def put_after_commit(entry: OutboxEntry, using: str, announce: Announce) -> None:
    """The commit's put: never raises, so the transaction's later puts still run."""
    try:
        policy = commit_policy(entry, get_settings().outbox.sweep_age)
        delivery = deliver(entry, using, policy=policy)
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


def put_many_after_commit(entries: Sequence[OutboxEntry], using: str,
                          announces: Sequence[Announce]) -> None:
    """`put_after_commit` for the rows of one bulk enqueue, in few round trips."""
    sweep_age = get_settings().outbox.sweep_age
    try:
        deliveries = deliver_many(entries, using,
                                  [commit_policy(entry, sweep_age) for entry in entries])
    except (redis.RedisError, QlessError) as exc:
        logger.warning("qless outbox: %d jobs of %s not all put at commit (%s: %s); their rows "
                       "stay for the sweep", len(entries), entries[0].klass,
                       type(exc).__name__, exc)
        return
    except Exception:
        logger.exception("qless outbox: %d jobs of %s not put at commit; their rows stay for "
                         "the sweep", len(entries), entries[0].klass)
        return
    for delivery, announce in zip(deliveries, announces, strict=True):
        if delivery.created:
            announce(delivery)
