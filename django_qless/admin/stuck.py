"""The overview's "What is stuck": what needs an operator, each line with what to open.

Silent workers still holding jobs, stalled jobs, jobs waiting on a failed or vanished
dependency, recurring templates and cron slots due but not put, cron slot jobs put but not
run, queues paused for long, and queues whose next job has waited past their threshold.
The reads are in `core.stuck`, `core.pause_times` and `core.latency_thresholds`, each
bounded; the queue counts, worker counts and latencies come from what the overview read.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..conf import get_settings
from ..core import Client, QueueCounts, WorkerCounts, latency_thresholds, pause_times
from ..core.crons import GRACE as CRON_GRACE
from ..core.stuck import (
    Blocked,
    BlockedScan,
    Due,
    LateSlot,
    SilentWorker,
    blocked_dependents,
    due_crons,
    due_templates,
    late_slots,
    silent_workers,
)
from .worker_rows import current_lease

#: Seconds a recurring template's next run may be overdue before it counts as not put:
#: templates spawn when a worker polls their queue, every few seconds while one runs.
RECUR_GRACE = 120.0
#: Seconds a cron slot job may wait after its slot before it counts as not run.
SLOT_LATE = 300.0
#: Seconds a queue may stay paused before it is listed.
PAUSED_LONG = 900.0
#: Blocked jobs named on the page (the rest are counted).
BLOCKED_SHOWN = 10


@dataclass(frozen=True)
class PausedQueue:
    """A queue paused for long: since when, and whether the admin paused it or it was
    first seen paused then."""

    name: str
    since: float
    by: str
    seconds: float


@dataclass(frozen=True)
class SlowQueue:
    """A queue whose next job has waited longer than its threshold (its own or the default)."""

    name: str
    latency: float
    threshold: float
    own: bool


@dataclass(frozen=True)
class Overdue:
    """A recurring template or cron schedule due and not put, and by how long."""

    name: str
    due: float
    overdue: float


@dataclass(frozen=True)
class Stuck:
    """Everything the panel lists; empty when nothing is stuck."""

    now: float
    workers: tuple[SilentWorker, ...]
    stalled: tuple[tuple[str, int], ...]
    blocked: BlockedScan
    templates: Mapping[str, Due]
    crons: Due
    late: tuple[LateSlot, ...]
    paused: tuple[PausedQueue, ...]
    slow: tuple[SlowQueue, ...]
    #: Seconds of silence after which another client's worker counts as silent.
    lease: float
    recur_grace: float = RECUR_GRACE
    cron_grace: float = CRON_GRACE
    slot_late: float = SLOT_LATE
    paused_long: float = PAUSED_LONG

    @property
    def empty(self) -> bool:
        """Nothing needs an operator (a depends scan cut short is not itself stuck)."""
        return not (self.workers or self.stalled or self.blocked.found or self.templates
                    or self.crons.total or self.late or self.paused or self.slow)

    def silent_for(self, worker: SilentWorker) -> float | None:
        """Seconds since the worker was last heard of (None: never)."""
        return None if worker.last_heard is None else max(0.0, self.now - worker.last_heard)

    @property
    def silent(self) -> tuple[tuple[SilentWorker, float | None], ...]:
        """The silent workers, each with for how long."""
        return tuple((worker, self.silent_for(worker)) for worker in self.workers)

    @property
    def due_templates(self) -> tuple[tuple[str, Due, tuple[Overdue, ...]], ...]:
        """Per queue, its templates due and not spawned, the first few named."""
        return tuple((queue, due, self.overdue(due)) for queue, due in self.templates.items())

    @property
    def due_crons(self) -> tuple[Overdue, ...]:
        """The first few cron schedules due and not put."""
        return self.overdue(self.crons)

    @property
    def late_slots(self) -> tuple[tuple[LateSlot, float], ...]:
        """Slot jobs put and not run, each with how long after its slot."""
        return tuple((slot, self.now - slot.slot) for slot in self.late)

    def overdue(self, due: Due) -> tuple[Overdue, ...]:
        """The members a `Due` names, with how long overdue."""
        return tuple(Overdue(name, at, max(0.0, self.now - at)) for name, at in due.first)

    @property
    def blocked_shown(self) -> tuple[Blocked, ...]:
        """The blocked jobs named on the page."""
        return self.blocked.found[:BLOCKED_SHOWN]

    @property
    def blocked_more(self) -> int:
        """Blocked jobs found but not named."""
        return max(0, len(self.blocked.found) - BLOCKED_SHOWN)

    @property
    def stalled_total(self) -> int:
        """Stalled jobs over every queue."""
        return sum(count for _, count in self.stalled)

    @property
    def templates_total(self) -> int:
        """Recurring templates due and not spawned, over every queue."""
        return sum(due.total for due in self.templates.values())


def build(client: Client, queues: Sequence[QueueCounts], workers: Sequence[WorkerCounts],
          latencies: Mapping[str, float]) -> Stuck:
    """The panel, from the overview's counts and a few bounded reads of its own."""
    now = client.now()
    lease = longest_lease(client)
    paused = pause_times.observe(client, [q.name for q in queues if q.paused], now)
    return Stuck(
        now=now,
        workers=tuple(silent_workers(client, workers, now, lease)),
        stalled=tuple((q.name, q.stalled) for q in queues if q.stalled),
        blocked=blocked_dependents(client, {q.name: q.depends for q in queues if q.depends}),
        templates=due_templates(client, [q.name for q in queues if q.recurring],
                                now - RECUR_GRACE),
        crons=due_crons(client, now - CRON_GRACE),
        late=tuple(late_slots(client, now, SLOT_LATE)),
        paused=tuple(sorted(
            (PausedQueue(name, since.at, since.by, now - since.at)
             for name, since in paused.items() if now - since.at > PAUSED_LONG),
            key=lambda p: (p.since, p.name))),
        slow=tuple(slow_queues(client, latencies)),
        lease=lease,
    )


def longest_lease(client: Client) -> float:
    """The longest lease a worker may hold: the default or a queue's own `<queue>-heartbeat`
    (a worker heartbeats once per lease, so silence shorter than that is normal)."""
    longest = current_lease(client)
    for key, value in client.config.as_text().items():
        if key.endswith("-heartbeat"):
            try:
                seconds = float(value)
            except ValueError:
                continue
            if math.isfinite(seconds):
                longest = max(longest, seconds)
    return longest


def slow_queues(client: Client, latencies: Mapping[str, float]) -> list[SlowQueue]:
    """Queues whose next job waited past their threshold, the longest wait first."""
    own = latency_thresholds.read_all(client)
    default = get_settings().admin.latency_threshold
    found = []
    for name, latency in latencies.items():
        threshold = own.get(name, default)
        # 0 (a queue's own) means never flag it.
        if threshold and latency > threshold:
            found.append(SlowQueue(name, latency, threshold, own=name in own))
    return sorted(found, key=lambda row: (-row.latency, row.name))


def threshold_of(client: Client, queue: str) -> tuple[float | None, float | None]:
    """A queue's own latency threshold (None: the default) and the default."""
    return latency_thresholds.read(client, queue), get_settings().admin.latency_threshold
