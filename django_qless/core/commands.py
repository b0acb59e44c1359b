"""The arguments of every qless script command, built and checked in one place.

Each builder returns a `Command` (the script command's name and its arguments after `now`)
that `Client.run` sends alone or `Batch` sends with others in one round trip. Writes check
their arguments strictly, so a refused call never reaches Redis; reads accept any name or
jid another qless client may have written. Job data arrives here already encoded
(`Client.encode`), since its size limit belongs to the client.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from . import validation as check
from .exceptions import InvalidArgumentError

Value = str | int | float


class Command(NamedTuple):
    """One script call: the command name and its arguments (the clock is added when sent)."""

    name: str
    args: tuple[Any, ...]


# Jobs: lifecycle (the worker's commands; the hot path, so only what can vary is checked).


def put(
    worker: str,
    queue: str,
    jid: str,
    klass: str,
    encoded: str,
    delay: float = 0,
    *,
    priority: float | None = None,
    tags: Iterable[str] | None = None,
    retries: int | None = None,
    depends: Iterable[str] | None = None,
    requeue: bool = False,
) -> Command:
    """`put` a new job (or re-put a jid); `requeue` puts only a job that exists."""
    args: list[Any] = [
        worker,
        check.queue_name(queue),
        check.jid(jid),
        check.label(klass, "klass"),
        encoded,
        check.number(delay, "delay", minimum=0),
    ]
    # Options left out keep the values of an existing job of the same jid.
    if priority is not None:
        args += ["priority", check.number(priority, "priority")]
    if tags is not None:
        args += ["tags", _json_list(check.labels(tags, "tag"))]
    if retries is not None:
        args += ["retries", check.integer(retries, "retries", minimum=0)]
    if depends is not None:
        args += ["depends", _json_list(check.jids(depends))]
    return Command("requeue" if requeue else "put", tuple(args))


def _json_list(items: list[str]) -> str:
    """`json.dumps(items)`; most puts have no tags or dependencies, spelled out here."""
    return json.dumps(items) if items else "[]"


#: What blocks a `put_if_absent`: a job of that jid in any state ("any"), or in any state
#: but complete ("active": a completed job is put again).
ABSENT_POLICIES = ("any", "active")


def put_if_absent(policy: str, *args: Any, **options: Any) -> Command:
    """`put.ifabsent` (a django_qless extension): `put`'s arguments, but an existing job of
    that jid (per `policy`) is left exactly as it is."""
    if policy not in ABSENT_POLICIES:
        raise InvalidArgumentError(f"policy must be 'any' or 'active', got {policy!r}")
    return Command("put.ifabsent", (policy, *put(*args, **options).args))


def pop(queue: str, worker: str, count: int = 1) -> Command:
    """Lease up to `count` jobs of `queue` to `worker`."""
    return Command("pop", (queue, worker, count))


def pop_first(queues: Sequence[str], worker: str, count: int = 1, *, ahead: int = 0,
              keep: int = 0) -> Command:
    """Lease up to `count` jobs of the first of `queues` (in order) that hands any out: one
    `pop` (plain) for one queue, else `pop.first` (a django_qless extension); the last
    `ahead` of them, jobs to hold for a slot not free yet, only as far as `keep` jobs stay
    waiting (`pop.first` then, even for one queue)."""
    hold = _ahead(ahead, keep)
    if len(queues) == 1 and not hold:
        return pop(queues[0], worker, count)
    return Command("pop.first", (worker, *hold, count, *queues))


def complete_pop(jid: str, worker: str, queue: str, encoded: str, queues: Sequence[str],
                 count: int = 1, *, lean: bool = False, ahead: int = 0, keep: int = 0
                 ) -> Command:
    """Complete a running job and lease up to `count` jobs of the first of `queues` that
    hands any out, in one call (`complete.pop`, a django_qless extension); the reply is
    `[state, JSON list of jobs]`, `lean` jobs without history and dependents if asked;
    `ahead` and `keep` as `pop_first` takes them."""
    shape = ("lean",) if lean else ()
    return Command("complete.pop", (jid, worker, queue, encoded, *shape, *_ahead(ahead, keep),
                                    count, *queues))


def _ahead(ahead: int, keep: int) -> tuple[Any, ...]:
    """The `ahead n keep` words of `pop.first` and `complete.pop` (none for no job ahead)."""
    return ("ahead", ahead, keep) if ahead > 0 else ()


def complete(
    jid: str,
    worker: str,
    queue: str,
    encoded: str,
    *,
    next_queue: str | None = None,
    delay: float = 0,
    depends: Sequence[str] | None = None,
) -> Command:
    """Complete a running job, or advance it to `next_queue`."""
    if next_queue is None:
        if delay or depends:
            raise InvalidArgumentError("delay and depends need a next_queue")
        return Command("complete", (jid, worker, queue, encoded))
    args: list[Any] = [jid, worker, queue, encoded, "next", check.queue_name(next_queue)]
    if delay:
        args += ["delay", check.number(delay, "delay", minimum=0)]
    if depends:
        args += ["depends", json.dumps(check.jids(depends))]
    return Command("complete", tuple(args))


def fail(jid: str, worker: str, group: str, message: str, encoded: str | None = None) -> Command:
    """Fail a running job into failure `group`."""
    args: list[Any] = [
        jid, worker, check.label(group, "failure group"), check.text(message, "message"),
    ]
    if encoded is not None:
        args.append(encoded)
    return Command("fail", tuple(args))


def retry(
    jid: str,
    queue: str,
    worker: str,
    delay: float = 0,
    group: str | None = None,
    message: str | None = None,
) -> Command:
    """Give a running job back for another try (group and message go together)."""
    args: list[Any] = [jid, queue, worker, check.number(delay, "delay", minimum=0)]
    if (group is None) != (message is None):
        raise InvalidArgumentError("retry needs both group and message, or neither")
    if group is not None:
        args += [check.label(group, "failure group"), check.text(message, "message")]
    return Command("retry", tuple(args))


def heartbeat(jid: str, worker: str, encoded: str | None = None) -> Command:
    """Renew a running job's lease (optionally replacing its data)."""
    return Command("heartbeat", (jid, worker) if encoded is None else (jid, worker, encoded))


# Jobs: commands anyone may send.


def cancel(jids: Sequence[str]) -> Command:
    """Delete jobs (refused while a job outside the call depends on one of them)."""
    return Command("cancel", tuple(check.jids(jids)))


def timeout(jids: Sequence[str]) -> Command:
    """Expire running jobs' leases now."""
    return Command("timeout", tuple(check.jids(jids)))


def priority(jid: str, value: float) -> Command:
    """Change a job's priority."""
    return Command("priority", (check.jid(jid), check.number(value, "priority")))


def log(jid: str, message: str, encoded: str | None = None) -> Command:
    """Append an entry to a job's history."""
    args: tuple[Any, ...] = (check.jid(jid), check.text(message, "message"))
    return Command("log", args if encoded is None else (*args, encoded))


def track(jid: str) -> Command:
    """Track a job."""
    return Command("track", ("track", check.jid(jid)))


def untrack(jid: str) -> Command:
    """Stop tracking a job."""
    return Command("track", ("untrack", check.jid(jid)))


def tracked() -> Command:
    """Every tracked job, and tracked jids whose job is gone."""
    return Command("track", ())


def tag(jid: str, tags: Iterable[str]) -> Command:
    """Add tags to a job."""
    return Command("tag", ("add", check.jid(jid), *check.labels(tags, "tag")))


def untag(jid: str, tags: Iterable[str]) -> Command:
    """Remove tags from a job."""
    return Command("tag", ("remove", check.jid(jid), *check.labels(tags, "tag")))


def depend(jid: str, jids: Iterable[str]) -> Command:
    """Make a job in state `depends` wait for more jobs."""
    return Command("depends", (check.jid(jid), "on", *check.jids(jids)))


def undepend(jid: str, jids: Iterable[str] | None = None) -> Command:
    """Stop waiting for some jobs, or for every job when `jids` is None."""
    others = ("all",) if jids is None else tuple(check.jids(jids))
    return Command("depends", (check.jid(jid), "off", *others))


# Jobs: reads.


def get(jid: str) -> Command:
    """One job."""
    return Command("get", (check.existing_name(jid, "jid"),))


def multiget(jids: Sequence[str]) -> Command:
    """Several jobs (unknown jids are left out of the reply)."""
    if isinstance(jids, str):
        raise InvalidArgumentError("expected a list of jids, not a string")
    return Command("multiget", tuple(check.existing_name(jid, "jid") for jid in jids))


def jobs(state: str, queue: str, offset: int, count: int) -> Command:
    """Jids of a queue in `state` (running, stalled, scheduled, depends, recurring)."""
    return Command("jobs", (
        state, check.existing_queue_name(queue), check.offset(offset), check.count(count)
    ))


def completed(offset: int, count: int) -> Command:
    """Jids of completed jobs, most recent first."""
    return Command("jobs", ("complete", check.offset(offset), check.count(count)))


def failed() -> Command:
    """Failure groups and their sizes."""
    return Command("failed", ())


def failed_group(group: str, start: int, limit: int) -> Command:
    """One page of a failure group's jids, newest first."""
    return Command("failed", (
        check.text(group, "failure group"), check.offset(start, "start"),
        check.count(limit, "limit"),
    ))


def unfail(queue: str, group: str, count: int) -> Command:
    """Put the oldest jobs of a failure group back into `queue`."""
    return Command("unfail", (
        check.queue_name(queue), check.label(group, "failure group"), check.count(count)
    ))


def tagged(tag_name: str, offset: int, count: int) -> Command:
    """One page of the jids carrying a tag."""
    return Command("tag", (
        "get", check.text(tag_name, "tag"), check.offset(offset), check.count(count)
    ))


def top_tags(offset: int, count: int) -> Command:
    """Tags carried by at least two jobs, most used first."""
    return Command("tag", ("top", check.offset(offset), check.count(count)))


# Queues.


def queues(name: str | None = None) -> Command:
    """Counts of every queue, or of one."""
    if name is None:
        return Command("queues", ())
    return Command("queues", (check.existing_queue_name(name),))


def peek(queue: str, count: int) -> Command:
    """The next jobs a pop would return, without leasing them."""
    return Command("peek", (check.existing_queue_name(queue), check.count(count)))


def length(queue: str) -> Command:
    """Running + waiting + scheduled jobs of a queue."""
    return Command("length", (check.existing_queue_name(queue),))


def stats(queue: str, when: float) -> Command:
    """Wait and run statistics of a queue for the day containing `when`."""
    return Command("stats", (
        check.existing_queue_name(queue), check.number(when, "date", minimum=0)
    ))


def pause(queue: str) -> Command:
    """Stop handing out a queue's jobs."""
    return Command("pause", (check.existing_queue_name(queue),))


def unpause(queue: str) -> Command:
    """Resume handing out a queue's jobs."""
    return Command("unpause", (check.existing_queue_name(queue),))


def forget_queue(queue: str) -> Command:
    """Drop a queue's name from the known queues (its jobs are untouched)."""
    return Command("queue.forget", (check.existing_queue_name(queue),))


# Recurring templates.


def recur(
    queue: str,
    jid: str,
    klass: str,
    encoded: str,
    interval: float,
    offset: float = 0,
    *,
    priority: float | None = None,
    tags: Iterable[str] | None = None,
    retries: int | None = None,
    backlog: int | None = None,
) -> Command:
    """Create or replace a template spawning a job every `interval` seconds."""
    args: list[Any] = [
        check.queue_name(queue),
        check.jid(jid),
        check.label(klass, "klass"),
        encoded,
        "interval",
        check.positive(interval, "interval"),
        check.number(offset, "offset", minimum=0),
    ]
    # The script defaults retries to 0; other qless clients send 5, like put's default.
    args += ["retries", check.integer(5 if retries is None else retries, "retries", minimum=0)]
    if priority is not None:
        args += ["priority", check.number(priority, "priority")]
    if tags is not None:
        args += ["tags", json.dumps(check.labels(tags, "tag"))]
    if backlog is not None:
        args += ["backlog", check.integer(backlog, "backlog", minimum=0)]
    return Command("recur", tuple(args))


#: Checks of the fields `recur.update` changes, by field name.
_TEMPLATE_FIELDS: dict[str, Any] = {
    "priority": lambda v: check.number(v, "priority"),
    "interval": lambda v: check.positive(v, "interval"),
    "retries": lambda v: check.integer(v, "retries", minimum=0),
    "data": lambda v: check.text(v, "data"),
    "klass": lambda v: check.label(v, "klass"),
    "queue": check.queue_name,
    "backlog": lambda v: check.integer(v, "backlog", minimum=0),
}


def recur_update(jid: str, changes: Sequence[tuple[str, Any]]) -> Command:
    """Change some fields of a template (`data` already encoded); the order is kept."""
    pairs: list[Any] = []
    for name, value in changes:
        if name not in _TEMPLATE_FIELDS:
            raise InvalidArgumentError(f"recur.update cannot change {name!r}")
        pairs += [name, _TEMPLATE_FIELDS[name](value)]
    return Command("recur.update", (check.jid(jid), *pairs))


def recur_tag(jid: str, tags: Iterable[str]) -> Command:
    """Add tags given to a template's future spawns."""
    return Command("recur.tag", (check.jid(jid), *check.labels(tags, "tag")))


def recur_untag(jid: str, tags: Iterable[str]) -> Command:
    """Remove tags from a template."""
    return Command("recur.untag", (check.jid(jid), *check.labels(tags, "tag")))


def unrecur(jid: str) -> Command:
    """Delete a template (jobs already spawned stay)."""
    return Command("unrecur", (check.jid(jid),))


def recur_get(jid: str) -> Command:
    """One template."""
    return Command("recur.get", (check.existing_name(jid, "jid"),))


# Config and workers.


def config_get(key: str | None = None) -> Command:
    """One config value, or every value (defaults overlaid with what is stored)."""
    return Command("config.get", () if key is None else (check.label(key, "config key"),))


def config_set(key: str, value: Value) -> Command:
    """Store a config value (the caller checks it against the key's rule)."""
    return Command("config.set", (check.label(key, "config key"), value))


def config_unset(key: str) -> Command:
    """Remove a stored config value."""
    return Command("config.unset", (check.label(key, "config key"),))


def workers(name: str | None = None) -> Command:
    """Every recently seen worker with its counts, or the jids one worker holds."""
    if name is None:
        return Command("workers", ())
    return Command("workers", (check.existing_name(name, "worker name"),))


def forget_workers(names: Iterable[str]) -> Command:
    """Forget workers (their jobs keep their leases until those expire)."""
    return Command("worker.deregister", tuple(check.existing_name(n, "worker name")
                                              for n in names))
