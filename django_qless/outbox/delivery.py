"""Turning an outbox row into a put: the one path of the commit's put and the sweep's."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import DatabaseError

from ..connection import get_client
from ..core.submission import submit
from .entries import submission_of
from .models import OutboxEntry

logger = logging.getLogger("django_qless.outbox")

#: The sweep's policy: any job of that jid, completed included, means the row was put.
SWEEP_POLICY = "any"


@dataclass(frozen=True)
class Delivery:
    """What a put of a row did: `created` a job, or found one (`state`) and left it."""

    jid: str
    created: bool
    delay: float
    #: The client's time of the put (what qless stamps the job with).
    at: float
    state: str | None = None
    #: False when the row could not be deleted (the sweep deletes it later).
    deleted: bool = True


def deliver(entry: OutboxEntry, using: str, *, policy: str | None) -> Delivery:
    """Put the row's job (`policy`: None for a plain put, else `put_if_absent`'s), then
    delete the row; an error leaves the row for the sweep."""
    client = get_client(entry.connection)
    now = client.now()
    submission = submission_of(entry, policy)
    [outcome] = submit(client, [submission], now=now)
    delivery = Delivery(entry.jid, outcome.created, submission.options.delay_at(now), now,
                        outcome.state)
    return dataclasses.replace(delivery, deleted=forget(entry, using))


def deliver_many(
    entries: Sequence[OutboxEntry], using: str, policies: Sequence[str | None]
) -> list[Delivery]:
    """`deliver` for the rows of one bulk enqueue (one connection): the puts in few round
    trips, then the tracking, then the rows deleted."""
    client = get_client(entries[0].connection)
    now = client.now()
    submissions = [submission_of(entry, policy)
                   for entry, policy in zip(entries, policies, strict=True)]
    outcomes = submit(client, submissions, now=now, pipelined=True)
    deliveries = [Delivery(entry.jid, outcome.created, submission.options.delay_at(now), now,
                           outcome.state)
                  for entry, submission, outcome
                  in zip(entries, submissions, outcomes, strict=True)]
    deleted = forget_many(entries, using)
    return [dataclasses.replace(delivery, deleted=deleted) for delivery in deliveries]


def forget(entry: OutboxEntry, using: str) -> bool:
    """Delete a row once its job is in Redis (kept on a database error: the sweep finds
    the job there and deletes it then)."""
    # `created` too: the same jid enqueued again since rewrote the row, which is not put yet.
    try:
        OutboxEntry.objects.using(using).filter(pk=entry.pk, created=entry.created).delete()
    except DatabaseError as exc:
        logger.warning("qless outbox: job %s is in Redis but its row could not be deleted "
                       "(%s); the sweep deletes it", entry.jid, exc)
        return False
    return True


#: Rows deleted per statement by `forget_many`.
FORGET_CHUNK = 500


def forget_many(entries: Sequence[OutboxEntry], using: str) -> bool:
    """`forget` for many rows, `FORGET_CHUNK` per DELETE; False on a database error (the
    rows not deleted yet are left to the sweep)."""
    rows = OutboxEntry.objects.using(using)
    try:
        for start in range(0, len(entries), FORGET_CHUNK):
            part = entries[start : start + FORGET_CHUNK]
            # The row's `created` too, as `forget` checks it: a jid enqueued again since
            # rewrote its row with a later time, and that put has not been made yet.
            rows.filter(pk__in=[entry.pk for entry in part],
                        created__in={entry.created for entry in part}).delete()
    except DatabaseError as exc:
        logger.warning("qless outbox: %d jobs are in Redis but their rows could not all be "
                       "deleted (%s); the sweep deletes them", len(entries), exc)
        return False
    return True
