"""Bounded reads behind the overview's "What is stuck": silent workers holding jobs, jobs
waiting on a failed or vanished dependency, recurring templates and cron slots due but not
put, and cron slot jobs put but not run.

Each read is a pipeline of per-key commands that touch a bounded number of members
(ZMSCORE, EXISTS, ZRANGE/ZRANGEBYSCORE with a LIMIT, ZCOUNT, SSCAN of one job's
dependencies, HGET): never KEYS or SCAN over the keyspace, never a whole large set.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import keys
from .crons import NOT_STARTED
from .records import WorkerCounts

if TYPE_CHECKING:
    from .client import Client

#: Workers holding jobs that are checked (the busiest first, as `workers` lists them).
MAX_WORKERS = 200
#: Queues whose depends set is looked at, and jobs looked at in each.
MAX_DEPENDS_QUEUES = 50
DEPENDS_PER_QUEUE = 100
#: Dependencies of one job read (SSCAN COUNT: a small set comes back whole in one step).
DEPENDENCIES_PER_JOB = 100
#: Cron schedules whose latest slot job is checked.
MAX_CRONS = 200
#: Members named for each due recurring queue or the due crons (the rest are counted).
SHOWN = 5


@dataclass(frozen=True)
class SilentWorker:
    """A worker that holds jobs but stopped reporting (ours) or was not seen for a lease."""

    name: str
    jobs: int
    stalled: int
    #: Whether it is one of ours (it published a presence), and when it was last heard of:
    #: its last publication (ours), or qless last seeing it (another client's).
    ours: bool
    last_heard: float | None

    @property
    def held(self) -> int:
        """Jobs it holds: under a live lease (`jobs`) or an expired one (`stalled`)."""
        return self.jobs + self.stalled


@dataclass(frozen=True)
class Blocked:
    """A job waiting on a dependency that failed or no longer exists (state None)."""

    jid: str
    queue: str
    dependency: str
    state: str | None


@dataclass(frozen=True)
class BlockedScan:
    """Jobs found blocked, and per queue how many depends jobs were looked at of how many."""

    found: tuple[Blocked, ...]
    looked: Mapping[str, tuple[int, int]]

    @property
    def partial(self) -> dict[str, tuple[int, int]]:
        """The queues where some depends jobs were not looked at: (looked, total)."""
        return {queue: seen for queue, seen in self.looked.items() if seen[0] < seen[1]}


@dataclass(frozen=True)
class Due:
    """Members of a schedule set due before a time: how many, and the first few with when."""

    total: int
    first: tuple[tuple[str, float], ...]


@dataclass(frozen=True)
class LateSlot:
    """A cron schedule's latest slot job, put but still not started."""

    schedule: str
    jid: str
    slot: float
    state: str


def silent_workers(client: Client, workers: Sequence[WorkerCounts], now: float,
                   lease: float) -> list[SilentWorker]:
    """The workers holding jobs whose presence expired (ours) or whom qless has not seen
    for more than `lease` seconds (other clients'): one pipelined round trip."""
    holders = [worker for worker in workers if worker.jobs or worker.stalled][:MAX_WORKERS]
    if not holders:
        return []
    names = [worker.name for worker in holders]
    pipe = client.redis.pipeline(transaction=False)
    pipe.zmscore(keys.WORKERS, names)
    pipe.zmscore(keys.WORKER_PRESENCE_INDEX, names)
    for name in names:
        pipe.exists(keys.worker_presence(name))
    seen, published, *present = pipe.execute()
    found = []
    for worker, last, publication, alive in zip(holders, seen, published, present, strict=True):
        ours = publication is not None
        # Ours: since its last publication; another client's: since qless last saw it.
        heard = publication if ours else last
        silent = not alive if ours else last is None or now - float(last) > lease
        if silent:
            found.append(SilentWorker(worker.name, worker.jobs, worker.stalled, ours,
                                      None if heard is None else float(heard)))
    return found


def blocked_dependents(client: Client, depends: Mapping[str, int]) -> BlockedScan:
    """Jobs waiting on a failed or vanished dependency among the first `DEPENDS_PER_QUEUE`
    of each queue's depends set (queue -> its size; the largest `MAX_DEPENDS_QUEUES`)."""
    queues = sorted((q for q, size in depends.items() if size), key=lambda q: (-depends[q], q))
    looked_at = queues[:MAX_DEPENDS_QUEUES]
    looked = {queue: (min(depends[queue], DEPENDS_PER_QUEUE), depends[queue])
              for queue in looked_at}
    looked.update({queue: (0, depends[queue]) for queue in queues[MAX_DEPENDS_QUEUES:]})
    if not looked_at:
        return BlockedScan((), looked)
    pipe = client.redis.pipeline(transaction=False)
    for queue in looked_at:
        pipe.zrange(keys.queue_set(queue, "depends"), 0, DEPENDS_PER_QUEUE - 1)
    waiting = [(queue, _text(jid)) for queue, jids in zip(looked_at, pipe.execute(), strict=True)
               for jid in jids]
    if not waiting:
        return BlockedScan((), looked)
    pipe = client.redis.pipeline(transaction=False)
    for _, jid in waiting:
        pipe.sscan(f"{keys.job(jid)}-dependencies", 0, count=DEPENDENCIES_PER_JOB)
    needs = [(queue, jid, [_text(dep) for dep in members])
             for (queue, jid), (_, members) in zip(waiting, pipe.execute(), strict=True)]
    dependencies = list(dict.fromkeys(dep for _, _, deps in needs for dep in deps))
    pipe = client.redis.pipeline(transaction=False)
    for dep in dependencies:
        pipe.hget(keys.job(dep), "state")
    states = {dep: None if state is None else _text(state)
              for dep, state in zip(dependencies, pipe.execute(), strict=True)}
    found = [Blocked(jid, queue, dep, states[dep])
             for queue, jid, deps in needs for dep in deps if states[dep] in (None, "failed")]
    return BlockedScan(tuple(found), looked)


def due_templates(client: Client, queues: Sequence[str], before: float) -> dict[str, Due]:
    """Per queue, its recurring templates whose next run is before `before` (not spawned)."""
    if not queues:
        return {}
    pipe = client.redis.pipeline(transaction=False)
    for queue in queues:
        recur = keys.queue_set(queue, "recur")
        pipe.zcount(recur, "-inf", before)
        pipe.zrangebyscore(recur, "-inf", before, start=0, num=SHOWN, withscores=True)
    replies = pipe.execute()
    found = {}
    for index, queue in enumerate(queues):
        total, first = int(replies[2 * index]), replies[2 * index + 1]
        if total:
            found[queue] = Due(total, tuple((_text(jid), float(at)) for jid, at in first))
    return found


def due_crons(client: Client, before: float) -> Due:
    """The cron schedules whose next slot is before `before` and was not put."""
    pipe = client.redis.pipeline(transaction=False)
    pipe.zcount(keys.CRON_INDEX, "-inf", before)
    pipe.zrangebyscore(keys.CRON_INDEX, "-inf", before, start=0, num=SHOWN, withscores=True)
    total, first = pipe.execute()
    return Due(int(total), tuple((_text(name), float(at)) for name, at in first))


def late_slots(client: Client, now: float, late: float) -> list[LateSlot]:
    """Cron schedules whose latest slot due by `now` is more than `late` seconds old and
    whose job is still waiting or scheduled (put, not started)."""
    names = [_text(name) for name in client.redis.zrange(keys.CRON_INDEX, 0, MAX_CRONS - 1)]
    if not names:
        return []
    pipe = client.redis.pipeline(transaction=False)
    for name in names:
        pipe.zrevrangebyscore(keys.cron_jobs(name), now, "-inf", start=0, num=1, withscores=True)
    latest = [(name, _text(reply[0][0]), float(reply[0][1]))
              for name, reply in zip(names, pipe.execute(), strict=True)
              if reply and float(reply[0][1]) < now - late]
    if not latest:
        return []
    pipe = client.redis.pipeline(transaction=False)
    for _, jid, _ in latest:
        pipe.hget(keys.job(jid), "state")
    return [LateSlot(name, jid, slot, _text(state))
            for (name, jid, slot), state in zip(latest, pipe.execute(), strict=True)
            if state is not None and _text(state) in NOT_STARTED]


def _text(value: Any) -> str:
    """A reply value as text, whether or not the connection decodes responses."""
    return value.decode() if isinstance(value, bytes) else str(value)
