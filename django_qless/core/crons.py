"""Cron schedules stored in Redis, and their slot jobs, each put exactly once.

qless repeats recurring templates by interval, so a cron schedule cannot be one. A synced
cron schedule is a hash of django_qless's own (`keys.cron_schedule`): its definition, a
digest of it, and the last slot handled; the index `keys.CRON_INDEX` scores each name by
its next slot. Whoever looks first (a worker's monitor tick, a `qless_recur` run, the
admin's Run now) puts each due slot's job with `put.ifabsent` under a jid derived from
the schedule, the slot and the definition, delayed to the slot's instant: any number of
writers create it once, and it is never runnable early. The last slot only moves
forward: it is written in a transaction under WATCH of the hash, so a writer that was
beaten reads again.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import redis

from ..cron import CronError, CronExpression, is_number
from . import keys
from .metadata import with_metadata
from .submission import PutOptions, Submission, submit

if TYPE_CHECKING:
    from .client import Client
    from .records import PutOutcome

#: Slots are put this long (seconds) before their instant, delayed to it.
LEAD = 60.0
#: A slot later than this (seconds) counts as missed, and runs per the catch-up policy;
#: one less late runs at once (a worker that just started, a slow tick).
GRACE = 60.0
#: First window searched backwards for the latest missed slots; it widens fourfold.
MISSED_WINDOW = 86_400.0
#: Transactions tried per schedule before leaving it to the next writer.
ATTEMPTS = 5
#: Slot jobs remembered per schedule (for prune and changes) this long after their slot.
REMEMBER = 7 * 86_400
#: Prefix of slot jids; a run-now job has `-now-` and a random part instead of a slot.
SLOT_JID_PREFIX = "cron-"
#: Hex digits of the definition digest a slot jid ends with.
DIGEST_IN_JID = 8
#: States of a slot job that has not started: prune and changes cancel these.
NOT_STARTED = ("scheduled", "waiting")


def slot_jid(name: str, slot: float, digest: str) -> str:
    """`cron-<name hash>-<slot epoch second>-<definition digest, 8 hex digits>`.

    The definition is part of it so that, while a changed schedule's old slot jobs are
    cancelled, a new one for the same instant is never mistaken for the old one.
    """
    return f"{jid_stem(name)}-{int(slot)}-{digest[:DIGEST_IN_JID]}"


def run_now_jid(name: str, token: str) -> str:
    """The jid of a job put by `Run now`: never one of a slot's."""
    return f"{jid_stem(name)}-now-{token}"


def jid_stem(name: str) -> str:
    """`cron-` + the first 16 hex digits of the SHA-256 of the schedule name (UTF-8)."""
    return SLOT_JID_PREFIX + hashlib.sha256(name.encode("utf-8")).hexdigest()[:16]


def catch_up_count(policy: str) -> int:
    """Missed slots run after downtime: "skip" 0, "latest" 1, "N" N."""
    if policy == "skip":
        return 0
    if policy == "latest":
        return 1
    if is_number(policy) and int(policy) >= 1:
        return int(policy)
    raise CronError(f"catch-up must be 'skip', 'latest' or a number >= 1, got {policy!r}")


@dataclass(frozen=True)
class CronDefinition:
    """What a cron schedule is: when (expression, zone, catch-up) and the job it puts."""

    name: str
    expression: str
    tz: str
    catch_up: str
    klass: str
    queue: str
    data: str
    priority: float
    tags: tuple[str, ...]
    retries: int

    #: Fields compared by a sync (the digest covers them all).
    COMPARED = ("expression", "tz", "catch_up", "klass", "queue", "data", "priority", "tags",
                "retries")

    @property
    def digest(self) -> str:
        """SHA-256 of the definition: equal digests, equal schedules."""
        text = json.dumps([self.name, *(self._plain(f) for f in self.COMPARED)])
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    @property
    def parsed(self) -> CronExpression:
        """The expression, parsed."""
        return CronExpression.parse(self.expression)

    def next_runs(self, after: float, count: int) -> list[float]:
        """The next `count` slot instants strictly after `after` (epoch seconds)."""
        return self.parsed.next_times(self.tz, after, count)

    def slots_between(self, after: float, until: float) -> Iterator[float]:
        """Slot instants in (after, until]."""
        start = dt.datetime.fromtimestamp(after, dt.timezone.utc)
        for slot in self.parsed.slots(self.tz, start):
            at = slot.at.timestamp()
            if at > until:
                return
            yield at

    def latest_between(self, after: float, until: float, count: int) -> list[float]:
        """The latest `count` slot instants in (after, until], oldest first."""
        if count <= 0 or until <= after:
            return []
        window = MISSED_WINDOW
        while True:
            start = max(after, until - window)
            found = list(self.slots_between(start, until))
            if len(found) >= count or start == after:
                return found[-count:]
            window *= 4

    def submission(self, jid: str, delay: float) -> Submission:
        """One of its jobs, put if absent (any job of that jid, completed too, blocks it)."""
        return Submission(jid, self.klass, self.queue, self.data, PutOptions(
            delay=delay, priority=self.priority, tags=self.tags, retries=self.retries,
            unique="any",
        ))

    def fields(self) -> dict[str, str]:
        """The hash fields, as text."""
        return {
            "expression": self.expression, "tz": self.tz, "catch_up": self.catch_up,
            "klass": self.klass, "queue": self.queue, "data": self.data,
            "priority": repr(self.priority), "tags": json.dumps(list(self.tags)),
            "retries": str(self.retries), "digest": self.digest,
        }

    @classmethod
    def from_fields(cls, name: str, raw: dict[str, str]) -> CronDefinition | None:
        """Parse a hash read back; None when it is not a whole definition."""
        try:
            return cls(
                name=name, expression=raw["expression"], tz=raw["tz"],
                catch_up=raw["catch_up"], klass=raw["klass"], queue=raw["queue"],
                data=raw["data"], priority=float(raw["priority"]),
                tags=tuple(str(t) for t in json.loads(raw["tags"])),
                retries=int(raw["retries"]),
            )
        except (KeyError, ValueError, TypeError):
            return None

    def _plain(self, name: str) -> Any:
        """A field as JSON-ready data."""
        value = getattr(self, name)
        return list(value) if isinstance(value, tuple) else value


@dataclass(frozen=True)
class StoredCron:
    """A cron schedule as Redis holds it: definition, last slot handled, next slot."""

    definition: CronDefinition
    last: float
    next_run: float | None

    @property
    def name(self) -> str:
        """The schedule name."""
        return self.definition.name

    @classmethod
    def from_fields(cls, name: str, raw: dict[str, str], score: float | None
                    ) -> StoredCron | None:
        """Parse a hash and its index score; None when it is not a whole one."""
        definition = CronDefinition.from_fields(name, raw)
        if definition is None or "last" not in raw:
            return None
        try:
            return cls(definition, float(raw["last"]), score)
        except ValueError:
            return None


@dataclass(frozen=True)
class Due:
    """What one pass decided for a schedule: the slots to put, the new last and next."""

    slots: tuple[float, ...]
    last: float
    next_run: float | None


def due(definition: CronDefinition, last: float, now: float, lead: float = LEAD) -> Due:
    """The slots to put now: the missed ones per the catch-up policy, then those within
    `lead`; the last slot handled (put or skipped); the first slot after it."""
    cutoff = now - GRACE
    missed = definition.latest_between(last, cutoff, catch_up_count(definition.catch_up))
    recent = list(definition.slots_between(max(last, cutoff), now + lead))
    handled = recent[-1] if recent else None
    if handled is None:
        skipped = definition.latest_between(last, cutoff, 1)
        handled = skipped[-1] if skipped else last
    following = definition.next_runs(handled, 1)
    return Due(tuple(missed + recent), max(handled, last), following[0] if following else None)


class CronStore:
    """The cron schedules of the database behind one qless client."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.redis = client.redis

    def names(self) -> list[str]:
        """Every synced schedule's name."""
        return [_text(name) for name in self.redis.zrange(keys.CRON_INDEX, 0, -1)]

    def read(self, names: Iterable[str]) -> list[StoredCron]:
        """The schedules of `names` that exist, in order."""
        wanted = list(dict.fromkeys(names))
        with self.redis.pipeline(transaction=False) as pipe:
            for name in wanted:
                pipe.hgetall(keys.cron_schedule(name))
                pipe.zscore(keys.CRON_INDEX, name)
            raw = pipe.execute()
        found = []
        for index, name in enumerate(wanted):
            fields, score = _texts(raw[2 * index]), raw[2 * index + 1]
            stored = StoredCron.from_fields(name, fields, None if score is None else float(score))
            if stored is not None:
                found.append(stored)
        return found

    def read_all(self) -> list[StoredCron]:
        """Every synced schedule, by name."""
        return sorted(self.read(self.names()), key=lambda s: s.name)

    def due_names(self, until: float) -> list[str]:
        """Schedules whose next slot is at or before `until`: one ZRANGEBYSCORE."""
        return [_text(n) for n in self.redis.zrangebyscore(keys.CRON_INDEX, "-inf", until)]

    def watch(self, pipe: redis.client.Pipeline, names: Iterable[str]) -> None:
        """WATCH the schedules' hashes and the index (a change aborts the transaction)."""
        watch: Callable[..., Any] = pipe.watch  # redis-py leaves it unannotated
        watch(keys.CRON_INDEX, *(keys.cron_schedule(name) for name in names))

    def queue_save(self, pipe: redis.client.Pipeline, definition: CronDefinition,
                   last: float) -> None:
        """Queue writing a definition whose last slot handled is `last`."""
        following = definition.next_runs(last, 1)
        mapping: dict[Any, Any] = {**definition.fields(), "last": repr(last)}
        pipe.hset(keys.cron_schedule(definition.name), mapping=mapping)
        if following:
            pipe.zadd(keys.CRON_INDEX, {definition.name: following[0]})
        else:
            pipe.zrem(keys.CRON_INDEX, definition.name)

    def queue_remove(self, pipe: redis.client.Pipeline, name: str) -> None:
        """Queue deleting a schedule (its slot jobs are cancelled by `cancel_pending`)."""
        pipe.delete(keys.cron_schedule(name))
        pipe.zrem(keys.CRON_INDEX, name)

    def cancel_pending(self, name: str, *, after: float | None = None,
                       keep: str | None = None, forget: bool = False) -> list[str]:
        """Cancel the schedule's slot jobs that have not started: only slots later than
        `after` and not of the definition digest `keep`, when given; `forget` drops its
        record of slot jobs too."""
        record = keys.cron_jobs(name)
        low = "-inf" if after is None else f"({after!r}"
        jids = [_text(j) for j in self.redis.zrangebyscore(record, low, "+inf")]
        if keep is not None:
            jids = [jid for jid in jids if not jid.endswith(f"-{keep[:DIGEST_IN_JID]}")]
        pending = [job.jid for job in self.client.get_jobs(jids) if job.state in NOT_STARTED]
        cancelled = self.client.cancel(*pending) if pending else []
        if forget:
            self.redis.delete(record)
        elif cancelled:
            self.redis.zrem(record, *cancelled)
        return cancelled

    def create_due(self, lead: float = LEAD) -> list[PutOutcome]:
        """Put the jobs of every slot due within `lead`, on every due schedule."""
        outcomes: list[PutOutcome] = []
        for name in self.due_names(self.client.now() + lead):
            outcomes += self.create_slots(name, lead)
        return outcomes

    def create_slots(self, name: str, lead: float = LEAD) -> list[PutOutcome]:
        """Put one schedule's due slot jobs and move its last slot forward."""
        done: list[PutOutcome] = []
        for _ in range(ATTEMPTS):
            with self.redis.pipeline() as pipe:
                key = keys.cron_schedule(name)
                watch: Callable[..., Any] = pipe.watch
                watch(key)
                stored = StoredCron.from_fields(name, _texts(pipe.hgetall(key)), None)
                if stored is None:
                    # Pruned (or half written by hand): nothing to put, forget the index entry.
                    pipe.unwatch()
                    self.redis.zrem(keys.CRON_INDEX, name)
                    return done
                now = self.client.now()
                plan = due(stored.definition, stored.last, now, lead)
                outcomes = self.put_slots(stored.definition, plan.slots, now)
                try:
                    pipe.multi()
                    pipe.hset(key, "last", repr(plan.last))
                    if plan.next_run is None:
                        pipe.zrem(keys.CRON_INDEX, name)
                    else:
                        pipe.zadd(keys.CRON_INDEX, {name: plan.next_run})
                    pipe.execute()
                    return done + outcomes
                except redis.WatchError:
                    # Beaten by another writer: what it put stays; read again.
                    undone = self._undo_if_stale(stored.definition, outcomes)
                    done += [o for o in outcomes if o.created and o.jid not in undone]
        return done

    def put_slots(self, definition: CronDefinition, slots: Sequence[float], now: float
                  ) -> list[PutOutcome]:
        """Put each slot's job if absent, delayed to its instant; recorded first, so a
        prune or a change finds it even if this process dies right after the put."""
        if not slots:
            return []
        digest = definition.digest
        jids = {slot_jid(definition.name, slot, digest): slot for slot in slots}
        record = keys.cron_jobs(definition.name)
        with self.redis.pipeline(transaction=False) as pipe:
            pipe.zadd(record, jids)
            pipe.zremrangebyscore(record, "-inf", now - REMEMBER)
            # Left behind by a writer that lost a race with a prune, it goes by itself.
            pipe.expire(record, REMEMBER)
            pipe.execute()
        return self._submit([definition.submission(jid, max(slot - now, 0))
                             for jid, slot in jids.items()])

    def put_now(self, definition: CronDefinition, token: str) -> PutOutcome:
        """Put one job of the schedule to run now, under a jid of its own (`Run now`)."""
        jid = run_now_jid(definition.name, token)
        [outcome] = self._submit([definition.submission(jid, 0)])
        return outcome

    def _submit(self, submissions: Sequence[Submission]) -> list[PutOutcome]:
        """Put slot jobs, the enqueue hooks' metadata added here, in the scheduling process."""
        client = self.client
        return submit(client, with_metadata(submissions, client.max_payload_bytes))

    def _undo_if_stale(self, used: CronDefinition, outcomes: Sequence[PutOutcome]
                       ) -> set[str]:
        """After a lost race: cancel the jobs just put if the schedule changed or went."""
        created = [o.jid for o in outcomes if o.created]
        if not created:
            return set()
        current = self.read([used.name])
        if current and current[0].definition.digest == used.digest:
            return set()
        pending = [job.jid for job in self.client.get_jobs(created) if job.state in NOT_STARTED]
        return set(self.client.cancel(*pending)) if pending else set()


def _text(value: Any) -> str:
    """A reply string (bytes or str)."""
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _texts(raw: dict[Any, Any]) -> dict[str, str]:
    """A hash reply as text."""
    return {_text(k): _text(v) for k, v in raw.items()}
