"""The one choice of an enqueue: run inline, defer to the outbox, put on commit, or put now."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from django.db import DEFAULT_DB_ALIAS, transaction

from ..conf import get_settings
from ..connection import get_client
from ..core.metadata import with_metadata
from ..core.submission import Submission, submit
from . import observers
from .request import Enqueue, Inline

if TYPE_CHECKING:
    from ..outbox.delivery import Delivery


def send(request: Enqueue) -> None:
    """Send an enqueue's submissions the way the settings and the transaction say.

    The enqueue hooks run first, here in the enqueuing process: their metadata (a trace
    context, a request id) is in the data before an outbox row or a put is written.
    """
    settings = get_settings()
    submissions = with_metadata(request.submissions, settings.max_payload_bytes)
    if submissions is not request.submissions:
        request = dataclasses.replace(request, submissions=submissions)
    run: Callable[[], None] = functools.partial(put_now, request)
    immediate = False
    if settings.immediate and request.inline is not None:
        immediate = True
        run = functools.partial(run_inline, request.inline, request.submissions)
    on_commit = settings.enqueue_on_commit if request.on_commit is None else request.on_commit
    # Deferred puts keep workers from seeing rows the transaction has not committed yet.
    if on_commit and transaction.get_connection(request.db_alias).in_atomic_block:
        outboxed = settings.outbox.enabled and not immediate
        if outboxed and defer(request):
            route: observers.Route = "outbox"
        else:
            transaction.on_commit(run, using=request.db_alias)
            route = "on_commit"
        if observers.LISTENERS:
            observers.dispatched(request, route)
    else:
        if observers.LISTENERS:  # told before the put, which announces the jobs it created
            observers.dispatched(request, "immediate" if immediate else "now")
        run()


def put_now(request: Enqueue) -> None:
    """Put the jobs into Redis (pipelined for a bulk enqueue), then announce those created."""
    client = get_client(request.connection)
    now = client.now()
    outcomes = submit(client, request.submissions, now=now, pipelined=request.many)
    created = [submission for submission, outcome
               in zip(request.submissions, outcomes, strict=True) if outcome.created]
    # A unique job that existed already: nothing changed, nothing is announced.
    if created:
        request.announce(created, now)


def run_inline(inline: Inline, submissions: Sequence[Submission]) -> None:
    """Immediate mode: run each submission inline, in order."""
    for submission in submissions:
        inline(submission)


def defer(request: Enqueue) -> bool:
    """Write the puts to the outbox in this transaction; they go to Redis on commit.

    False when the database has no outbox table (then nothing was written).
    """
    from ..outbox import commit, entries  # noqa: PLC0415 - a model: needs the app registry

    submissions = request.submissions
    # A delay counts from the enqueue: the row keeps the time the job may run from.
    needs_clock = any(s.options.not_before is None for s in submissions)
    now = get_client(request.connection).now() if needs_clock else None
    rows = [entries.row_of(submission, request.connection, now, request.task_backend)
            for submission in submissions]
    announces = [functools.partial(_announce_delivered, request, submission)
                 for submission in submissions]
    using = request.db_alias or DEFAULT_DB_ALIAS
    if request.many:
        return commit.defer_many(rows, using, announces)
    return commit.defer(rows[0], using, announces[0])


def _announce_delivered(request: Enqueue, submission: Submission, delivery: Delivery) -> None:
    """The announcement of one job the commit's put created."""
    request.announce([submission], delivery.at)
