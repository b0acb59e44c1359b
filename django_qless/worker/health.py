"""Startup health checks: refuse to work against a Redis that may lose jobs, or with a bad clock.

- Eviction: with any `maxmemory-policy` but `noeviction`, Redis deletes keys when it is
  full, and qless jobs, locks and queue entries vanish without a trace.
- Clock skew: qless takes `now` from its callers, so lock expiry is computed with each
  worker's clock. Two workers within a quarter of the lease of Redis' `TIME` differ by at
  most half a lease, so a lock renewed on time never looks expired to the other one.
- Leases: any qless client can store a lease of 0 s or less, a negative grace period or
  concurrency cap in the shared configuration; with those, several workers hold one job.
- Persistence: without an AOF, or with `appendfsync no`, Redis dying loses acknowledged
  puts. A warning, or a refusal with `QLESS['REQUIRE_DURABLE_REDIS']`.

`check_startup()` raises `QlessConfigurationError` listing every problem found. A Redis
that refuses `INFO` or `TIME` (managed services rename or forbid commands) is not a
problem in itself: that check is skipped with a warning. `ClockWatch` repeats the clock
check while the worker runs, since a clock can also be stepped after start-up, and
`LeaseGuard` repeats the lease check, pausing the worker's pops while it fails.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import redis

from .. import conf
from ..core import Client, QlessError, Queue
from ..core.config import lease_for, lease_problems
from ..core.persistence import read_persistence
from ..exceptions import QlessConfigurationError

logger = logging.getLogger("django_qless.worker")

SAFE_POLICY = "noeviction"
#: The allowed clock skew, as a fraction of the shortest lease of the worker's queues.
SKEW_FRACTION = 0.25
#: Bounds (seconds) of the interval between two clock checks of a running worker, which is
#: half the shortest lease in between: a step is caught before a lock it skews runs out.
CLOCK_CHECK_MIN = 1.0
CLOCK_CHECK_MAX = 60.0


def eviction_problem(memory_info: Mapping[str, Any]) -> str | None:
    """What is wrong with the `INFO memory` eviction policy, or None."""
    policy = str(memory_info.get("maxmemory_policy", SAFE_POLICY))
    if policy == SAFE_POLICY:
        return None
    return (f"Redis maxmemory-policy is {policy}: Redis may evict qless keys (jobs, locks, "
            f"queues) under memory pressure; set maxmemory-policy {SAFE_POLICY}")


def skew_problem(skew: float, queue: str, lease: float) -> str | None:
    """What is wrong with a clock `skew` seconds off Redis, given the shortest lease, or None."""
    allowed = lease * SKEW_FRACTION
    if abs(skew) <= allowed:
        return None
    return (f"clock skew: this worker's clock is {skew:+.1f} s off Redis' TIME, more than a "
            f"quarter of the shortest lease ({queue}: {lease:g} s -> {allowed:.1f} s "
            f"allowed); sync the clocks (NTP/chrony)")


def measure_skew(client: Client) -> float:
    """The client's clock minus Redis' `TIME`: the smallest skew the round trip allows.

    Redis read its clock somewhere between our two readings, so a slow round trip (a
    stalled or paused Redis) widens what the skew can be; only what is certain counts.
    """
    before = client.now()
    seconds, micros = client.redis.time()
    after = client.now()
    redis_time = int(seconds) + int(micros) / 1e6
    if redis_time < before:
        return before - redis_time
    if redis_time > after:
        return after - redis_time
    return 0.0


def shortest_lease(queues: Sequence[Queue]) -> tuple[str, float]:
    """The queue with the shortest lease (`<queue>-heartbeat`, else `heartbeat`) and its lease."""
    leases = [(queue.name, float(queue.heartbeat)) for queue in queues]
    return min(leases, key=lambda item: item[1])


def check_startup(client: Client, queues: Sequence[Queue], *,
                  require_durable: bool | None = None) -> None:
    """Run every check; raise `QlessConfigurationError` with all the problems found.

    `require_durable` (default: `QLESS['REQUIRE_DURABLE_REDIS']`) makes a Redis that can
    lose acknowledged puts a problem; otherwise it is logged as a warning.
    """
    if require_durable is None:
        require_durable = conf.get_settings().require_durable_redis
    leases = lease_problem(client, queues)
    # The clock budget is a quarter of the lease: it cannot be judged without good leases.
    found = (_eviction(client), leases, None if leases else _skew(client, queues))
    problems = [problem for problem in found if problem]
    durability = _persistence(client)
    if durability and require_durable:
        problems.append(f"{durability} (QLESS['REQUIRE_DURABLE_REDIS'] is on)")
    elif durability:
        logger.warning("qless worker: %s", durability)
    if problems:
        raise QlessConfigurationError("; ".join(problems))


def lease_problem(client: Client, queues: Sequence[Queue]) -> str | None:
    """The unsafe lease settings of the queues' shared configuration, on one line, or None."""
    found = client.config.lease_problems([queue.name for queue in queues])
    return "; ".join(found) if found else None


def _persistence(client: Client) -> str | None:
    """How Redis can lose acknowledged puts, or None; an accepted risk is noted at INFO."""
    try:
        persistence = read_persistence(client.redis)
    except redis.ResponseError as exc:
        logger.warning("qless worker: cannot check Redis persistence (%s); skipped", exc)
        return None
    if persistence.note:
        logger.info("qless worker: %s", persistence.note)
    return persistence.problem


def _eviction(client: Client) -> str | None:
    """The eviction check, skipped when INFO is refused."""
    return _guarded("maxmemory-policy", lambda: eviction_problem(client.redis.info("memory")))


def check_interval(lease: float) -> float:
    """Seconds between two checks of a running worker: half the lease, within bounds."""
    return min(max(lease / 2, CLOCK_CHECK_MIN), CLOCK_CHECK_MAX)


def _skew(client: Client, queues: Sequence[Queue]) -> str | None:
    """The clock check, skipped when TIME is refused or there is no queue."""
    if not queues:
        return None
    name, lease = shortest_lease(queues)
    return _guarded("clock skew", lambda: skew_problem(measure_skew(client), name, lease))


def _guarded(what: str, check: Callable[[], str | None]) -> str | None:
    """Run a check; a command Redis refuses skips it with a warning."""
    try:
        return check()
    except redis.ResponseError as exc:
        logger.warning("qless worker: cannot check %s (%s); skipped", what, exc)
        return None


class ClockWatch:
    """Re-checks the clock of a running worker, at most every half lease (within bounds)."""

    def __init__(self, client: Client, queues: Sequence[Queue]) -> None:
        self.client = client
        self.queues = queues
        self._due = time.monotonic() + CLOCK_CHECK_MIN

    def problem(self) -> str | None:
        """The skew problem when a check is due and finds one, else None."""
        now = time.monotonic()
        if now < self._due or not self.queues:
            return None
        self._due = now + CLOCK_CHECK_MAX
        try:
            name, lease = shortest_lease(self.queues)
            self._due = now + check_interval(lease)
            return _guarded("clock skew", lambda: skew_problem(measure_skew(self.client),
                                                                name, lease))
        except redis.RedisError:
            return None  # the worker's loop reports Redis being away; check again later
        except QlessError:
            self._due = now + CLOCK_CHECK_MIN
            return None  # an unreadable lease: `LeaseGuard` pauses the worker over it


class LeaseGuard:
    """Re-reads the lease settings of a running worker; pops wait while they are unsafe.

    The monitor thread calls `poll()` on the clock check's cadence (half the shortest
    lease, within bounds; the shortest bound while the settings are bad) and before each
    lease renewal; the job thread only reads `safe`. A job already running goes on, but its
    lease is not renewed meanwhile (a renewal would take its expiry from the bad setting):
    it finishes within the last good renewal, or the fence stops it (see `fence`).
    """

    def __init__(self, client: Client, queues: Sequence[Queue]) -> None:
        self.client = client
        self.queues = queues
        #: The problem found by the latest check; None while the settings are safe.
        self.problem: str | None = None
        #: Each queue's lease (seconds) as of the latest check, when it was usable.
        self.leases: dict[str, float] = {}
        self._due = time.monotonic() + CLOCK_CHECK_MIN

    @property
    def safe(self) -> bool:
        """Whether popping and renewing are safe, as of the latest check."""
        return self.problem is None

    def poll(self, *, force: bool = False) -> None:
        """Check the settings when a check is due; with `force` (before a renewal) now,
        and a Redis error is raised, as the renewal's own would be."""
        now = time.monotonic()
        if force:
            # One read (the config); the cadence is left as it was.
            self._record(self._read())
            if self.problem:
                self._due = min(self._due, now + CLOCK_CHECK_MIN)
        elif now >= self._due:
            try:
                problem = self._read()
            except redis.RedisError as exc:
                self._due = now + CLOCK_CHECK_MIN
                # The worker's loop reports Redis being away; keep the last verdict (a
                # renewal checks again first, and the fence covers a renewal that fails).
                logger.debug("qless worker %s: lease settings not checked: %s",
                             self.client.worker_name, exc)
                return
            self._record(problem)
            self._due = now + (CLOCK_CHECK_MIN if problem else self._interval())

    def _read(self) -> str | None:
        """Read the settings: the problem found (None: safe); the leases are kept."""
        values = self.client.config.as_text()
        names = [queue.name for queue in self.queues]
        self.leases = {name: lease for name in names
                       if (lease := lease_for(values, name)) is not None}
        found = lease_problems(values, names)
        return "; ".join(found) if found else None

    def _record(self, problem: str | None) -> None:
        """Take a reading, logging a change either way."""
        name = self.client.worker_name
        if problem and problem != self.problem:
            logger.error("qless worker %s: %s; not popping until it is fixed", name, problem)
        elif problem is None and self.problem is not None:
            logger.warning("qless worker %s: lease settings fixed; popping again", name)
        self.problem = problem

    def _interval(self) -> float:
        """The clock check's interval for these queues (the shortest one if unreadable)."""
        try:
            return check_interval(shortest_lease(self.queues)[1])
        except QlessError:
            return CLOCK_CHECK_MIN
