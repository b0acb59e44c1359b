"""`JobDefinition.enqueue_many`: many calls validated together, then put in few round trips.

Every call is checked exactly as `.enqueue()` checks one (signature, JSON, payload size),
all of them before anything is written: one bad call raises its own typed error, with a
note naming its position, and nothing is put. The puts then go to Redis as pipelined
`put` (or `put.ifabsent` for `unique=` jobs) script calls, `core.put_many.CHUNK` per round
trip, under the same rules as `.enqueue()`: on commit (through the outbox) inside a
transaction, inline in immediate mode, `job_enqueued` once each job is in Redis.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db import DEFAULT_DB_ALIAS, transaction

from . import signals
from .conf import QlessSettings, get_settings
from .connection import get_client
from .core import Command, PutOutcome, commands
from .exceptions import InvalidJobError

if TYPE_CHECKING:
    from .definitions import JobDefinition, Submission

#: One call of `enqueue_many`: its positional and its keyword arguments.
Call = tuple[Sequence[Any], Mapping[str, Any]]


@dataclass(frozen=True)
class Bulk:
    """Validated calls of one definition: what they share (the first call's submission)
    and, per call, its jid and encoded data."""

    template: Submission
    jids: list[str]
    data: list[str]

    def submissions(self) -> list[Submission]:
        """One submission per call (for the outbox and immediate mode)."""
        return [dataclasses.replace(self.template, jid=jid, encoded=encoded)
                for jid, encoded in zip(self.jids, self.data, strict=True)]


def enqueue_many(defn: JobDefinition[Any, Any], calls: Iterable[Call]) -> list[str]:
    """Validate every call, then put them all (now or on commit); the jids, in order."""
    if defn.jid is not None:
        raise InvalidJobError(
            f"{defn.name}.enqueue_many(): a fixed jid (.using(jid=...)) would give every job "
            "the same one; enqueue_many needs one jid per job"
        )
    settings = get_settings()
    bulk = validate(defn, settings, calls)
    if bulk is None:
        return []
    if settings.immediate:
        send = functools.partial(_run_inline, defn, bulk)
    else:
        send = functools.partial(put_all, defn, bulk)
    on_commit = settings.enqueue_on_commit if defn.on_commit is None else defn.on_commit
    # As `.enqueue()`: workers must not see jobs of rows the transaction has not committed.
    if on_commit and transaction.get_connection(defn.db_alias).in_atomic_block:
        outboxed = settings.outbox.enabled and not settings.immediate
        if not (outboxed and _defer(defn, bulk)):
            transaction.on_commit(send, using=defn.db_alias)
    else:
        send()
    return list(bulk.jids)


def validate(
    defn: JobDefinition[Any, Any], settings: QlessSettings, calls: Iterable[Call]
) -> Bulk | None:
    """Every call checked as `.enqueue()` checks one (None when there is none); a bad
    call's error notes its position."""
    template: Submission | None = None
    jids: list[str] = []
    data: list[str] = []
    for index, call in enumerate(calls):
        try:
            args, kwargs = split_call(call)
            if template is None:
                # The first call is checked whole; what the others share is checked once.
                template = defn.prepare(settings, args, kwargs)
                encoded = template.encoded
                jids.append(template.jid)
            else:
                defn.check_call(args, kwargs)
                encoded = defn.encode_call(settings, args, kwargs)
                jids.append(defn.new_jid(encoded))
        except Exception as exc:
            exc.add_note(f"{defn.name}.enqueue_many(): call #{index}; nothing was enqueued")
            raise
        data.append(encoded)
    return None if template is None else Bulk(template, jids, data)


def split_call(call: object) -> Call:
    """`(args, kwargs)` of one call, refusing any other shape."""
    if type(call) is tuple and len(call) == 2:  # the usual shape, without the checks below
        args, kwargs = call
        if type(args) is tuple and type(kwargs) is dict:
            return args, kwargs
    if not isinstance(call, tuple | list) or len(call) != 2:
        raise InvalidJobError(
            f"each call must be an (args, kwargs) pair, got {type(call).__name__}"
        )
    args, kwargs = call
    if isinstance(args, str | bytes) or not isinstance(args, Sequence):
        raise InvalidJobError(f"args must be a list or tuple, got {type(args).__name__}")
    if not isinstance(kwargs, Mapping):
        raise InvalidJobError(f"kwargs must be a dict, got {type(kwargs).__name__}")
    return args, kwargs


def put_all(defn: JobDefinition[Any, Any], bulk: Bulk) -> None:
    """Write the jobs to Redis in few round trips, then track and announce them."""
    template = bulk.template
    client = get_client(template.connection)
    # The first call's command is built (and checked) whole; the others differ from it
    # only by their jid and data, both checked already.
    args = (client.worker_name, template.queue, template.jid, template.klass,
            template.encoded, template.delay)
    options: dict[str, Any] = {"priority": template.priority, "tags": template.tags,
                               "retries": template.retries, "depends": template.depends}
    if template.unique is None:
        first = commands.put(*args, **options)
    else:
        first = commands.put_if_absent(template.unique, *args, **options)
    at = 2 if template.unique is None else 3  # the jid's place: after the policy, if any
    head, klass, tail = first.args[:at], first.args[at + 1], first.args[at + 3:]
    name = first.name
    replies = client.put_many([
        Command(name, (*head, jid, klass, encoded, *tail))
        for jid, encoded in zip(bulk.jids, bulk.data, strict=True)
    ])
    if template.unique is None:
        created = bulk.jids
    else:
        created = [jid for jid, reply in zip(bulk.jids, replies, strict=True)
                   if PutOutcome.from_reply(reply).created]
    if template.tracked and created:
        # qless has no tracked flag on put: tracking is a second, separate command.
        client.put_many([commands.track(jid) for jid in created])
    announce(defn, template, created)


def announce(defn: JobDefinition[Any, Any], template: Submission, jids: Sequence[str]) -> None:
    """`job_enqueued` for each job put, as `.enqueue()` sends it (one sender lookup)."""
    signal = signals.job_enqueued
    if not signal.receivers:
        return
    from .registry import registry  # noqa: PLC0415 - the registry imports the definitions

    sender = registry.lookup(defn.name) or defn
    shared = {"queue": template.queue, "klass": template.klass,
              "priority": template.priority, "tags": template.tags, "delay": template.delay,
              "connection": template.connection, "immediate": False}
    for jid in jids:
        signals.send(signal, sender, jid=jid, **shared)


def _run_inline(defn: JobDefinition[Any, Any], bulk: Bulk) -> None:
    """Immediate mode: run each call inline, in order, as `.enqueue()` does."""
    for submission in bulk.submissions():
        defn._run_inline(submission)  # noqa: SLF001


def _defer(defn: JobDefinition[Any, Any], bulk: Bulk) -> bool:
    """Write every put to the outbox in this transaction; they go to Redis on commit.

    False when the database has no outbox table (then nothing was written).
    """
    from .outbox import commit, entries  # noqa: PLC0415 - a model: needs the app registry

    now = get_client(bulk.template.connection).now()
    submissions = bulk.submissions()
    rows = [entries.for_submission(submission, now) for submission in submissions]
    announces = [functools.partial(_announce_delivered, defn, submission)
                 for submission in submissions]
    return commit.defer_many(rows, defn.db_alias or DEFAULT_DB_ALIAS, announces)


def _announce_delivered(
    defn: JobDefinition[Any, Any], submission: Submission, delivery: object
) -> None:
    """`job_enqueued` for one job of a bulk put made at commit."""
    defn._announce(submission)  # noqa: SLF001
