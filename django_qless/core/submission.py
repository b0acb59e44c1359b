"""A put as one value (`Submission`), and the one builder and sender of its commands.

Every enqueue goes through here: `@qless_job` (single and bulk), the Tasks backend (single
and bulk), the outbox's puts at commit and by its sweep, and cron slots; only the
client's own `Queue.put` and `Job.requeue` build their command directly. `put_commands` is
the one place a submission becomes the script's `put` or `put.ifabsent` arguments, every
option checked before anything is sent; `submit` sends them and tracks the tracked jobs
it created. The enqueue hooks' metadata is already in a submission's data when it gets
here: it is added where the job is enqueued (`core.metadata`, called by
`enqueue.dispatch.send` and the cron slot puts), because an outbox row is put after the
commit or by a sweep in another process, where the enqueuing request's context is gone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from . import commands
from . import validation as check
from .commands import Command
from .records import PutOutcome

if TYPE_CHECKING:
    from .client import Client


@dataclass(frozen=True)
class PutOptions:
    """How a job is put: when, its priority, tags, retries, dependencies, tracking, uniqueness.

    An option left as None is left out of the put, so a re-put of an existing jid keeps
    that job's value (an empty tuple is sent, and replaces it).
    """

    #: Seconds after the put before the job may run.
    delay: float = 0.0
    #: Epoch seconds before which the job may not run; when set, the delay is counted from
    #: the put's clock instead (never below 0).
    not_before: float | None = None
    priority: float | None = None
    tags: tuple[str, ...] | None = None
    retries: int | None = None
    depends: tuple[str, ...] | None = None
    #: Track the job once it is created (qless has no flag for it on put).
    tracked: bool = False
    #: A `put.ifabsent` policy ("active" or "any"); None for a plain put.
    unique: str | None = None

    def delay_at(self, now: float | None) -> float:
        """The put's delay when it is sent at `now` (needed only with `not_before`)."""
        if self.not_before is None:
            return self.delay
        if now is None:
            raise ValueError("a put with not_before needs the clock of its put")
        return max(0.0, self.not_before - now)


class Submission(NamedTuple):
    """One job to put: its jid, klass, queue, encoded data and put options."""

    # A named tuple, not a frozen dataclass: a bulk enqueue builds one per job, and a
    # frozen dataclass's __init__ costs about three times as much.
    jid: str
    klass: str
    queue: str
    #: The job data, already checked and encoded as JSON (`Client.encode`).
    data: str
    options: PutOptions = PutOptions()

    def with_job(self, jid: str, data: str) -> Submission:
        """The same put for another job of the same klass (bulk enqueues)."""
        return Submission(jid, self.klass, self.queue, data, self.options)


def _put_command(submission: Submission, worker: str, now: float | None) -> Command:
    """The `put` (or `put.ifabsent`) of one submission, every option checked."""
    options = submission.options
    args = (worker, submission.queue, submission.jid, submission.klass, submission.data,
            options.delay_at(now))
    kwargs: dict[str, Any] = {"priority": options.priority, "tags": options.tags,
                              "retries": options.retries, "depends": options.depends}
    if options.unique is None:
        return commands.put(*args, **kwargs)
    return commands.put_if_absent(options.unique, *args, **kwargs)


def put_commands(
    submissions: Sequence[Submission], worker: str, now: float | None = None
) -> list[Command]:
    """The command of each submission, all built (and checked) before any is sent.

    A submission that differs from the one before only by jid and data (the calls of one
    bulk enqueue) reuses that one's checked arguments: only its jid is checked again.
    """
    built: list[Command] = []
    shared: Submission | None = None
    name, head, klass, tail = "", (), "", ()
    for submission in submissions:
        # `_same_put`, its identity test inlined: a bulk enqueue's calls share their options.
        if shared is not None and (
            submission.options is shared.options and submission.klass == shared.klass
            and submission.queue == shared.queue or _same_put(shared, submission)
        ):
            # Only the jid and the data differ from the shared command's arguments.
            built.append(Command(name, (*head, check.jid(submission.jid), klass,
                                        submission.data, *tail)))
            continue
        command = _put_command(submission, worker, now)
        built.append(command)
        shared = submission
        # The jid's place: after the worker and queue, and the policy of put.ifabsent.
        at = 2 if command.name == "put" else 3
        name, head = command.name, command.args[:at]
        klass, tail = command.args[at + 1], command.args[at + 3:]
    return built


def _same_put(one: Submission, other: Submission) -> bool:
    """True when two submissions put the same klass into the same queue the same way."""
    return (one.klass == other.klass and one.queue == other.queue
            and (one.options is other.options or one.options == other.options))


def submit(
    client: Client, submissions: Sequence[Submission], *, now: float | None = None,
    pipelined: bool = False,
) -> list[PutOutcome]:
    """Put the submissions, then track each tracked job created; an outcome per submission.

    `pipelined` sends them in few round trips (`Client.put_many`), else one call each.
    `now` is the clock the delays of `not_before` puts count from (read when needed).
    """
    if now is None and any(s.options.not_before is not None for s in submissions):
        now = client.now()
    built = put_commands(submissions, client.worker_name, now)
    if pipelined:
        return _submit_pipelined(client, submissions, built)
    outcomes = []
    for submission, command in zip(submissions, built, strict=True):
        if submission.options.unique is None:
            outcome = PutOutcome(client.put(command), True, None)
        else:
            outcome = client.put_if_absent(command)
        if outcome.created and submission.options.tracked:
            client.track(submission.jid)
        outcomes.append(outcome)
    return outcomes


def _submit_pipelined(
    client: Client, submissions: Sequence[Submission], built: Sequence[Command]
) -> list[PutOutcome]:
    """`submit` of built commands in few round trips, the tracking in a second batch."""
    replies = client.put_many(built)
    outcomes = [
        PutOutcome(submission.jid, True, None) if submission.options.unique is None
        else PutOutcome.from_reply(reply)
        for submission, reply in zip(submissions, replies, strict=True)
    ]
    # qless has no tracked flag on put: tracking is a second, separate command.
    tracks = [commands.track(submission.jid)
              for submission, outcome in zip(submissions, outcomes, strict=True)
              if outcome.created and submission.options.tracked]
    if tracks:
        client.put_many(tracks)
    return outcomes
