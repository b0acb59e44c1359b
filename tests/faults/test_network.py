"""C5: network faults between the workers and Redis, through a fault proxy (tests/faults/proxy.py).

Two workers reach Redis only through the proxy (socket_timeout 2 s); a producer puts jobs
through it too, each with its own jid, and puts the same jid again until a put is
answered. The test itself talks to Redis directly. Faults, one per test: 100-200 ms of
latency on every chunk; a blackhole (bytes read, nothing forwarded) for several seconds
longer than socket_timeout; the same with only Redis's answers dropped (commands run
unacknowledged); every connection reset (with two workers, and with one, which must pop
back and run the jobs whose completion the reset lost). Then the proxy heals. Connections
that were blackholed stay dead (half-open), so each client has to notice and connect again.

Pass: no worker process crashes or is restarted; every job put completes (0 lost, none
failed for exhausted retries); at most the jobs the workers can hold at once (a running
job and one popped ahead, or one per slot at `--concurrency N`; plus re-puts of jobs that
had already run) run twice, never at the same time; every retried put leaves
one job; each worker pops again within 2 x socket_timeout (+ the loop's pause after an
error) of the heal; and after the heal a move of a running job to another queue, sent
directly to Redis, stops it within a second, so each worker's lock-loss listener is
subscribed again.
"""

from __future__ import annotations

import json
import random
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from django_qless.core import Client
from django_qless.worker import monitor
from django_qless.worker.loop import ERROR_PAUSE
from tests.faults import ledger
from tests.faults.checks import (
    AT_EACH_CONCURRENCY,
    completed,
    compressed_time,
    most_held,
    outcome,
    put_jobs,
    qless_client,
    settle,
)
from tests.faults.fleet import Fleet
from tests.faults.proxy import CLIENT_OPTIONS, SOCKET_TIMEOUT, FaultProxy
from tests.redis_harness import RedisServer
from tests.support import wait_for

pytestmark = [pytest.mark.faults, pytest.mark.timeout(60)]

WORKERS = 2
JOBS = 600
PUT_EVERY = 0.05
#: A worker pops again this soon after the heal: a command sent into the blackhole just
#: before it times out (socket_timeout) and the retry on a new connection may meet the end
#: of the fault too (socket_timeout again); after an error the loop pauses ERROR_PAUSE.
RECOVERY = 2 * SOCKET_TIMEOUT + ERROR_PAUSE
#: A lock-loss event reaches a subscribed monitor in milliseconds; a second is the budget.
STOP_WITHIN = 1.0
#: A monitor notices its event connection died in a blackhole (half-open: no error, only
#: silence) at its second unanswered PING, and subscribes again a pause later.
LISTENING_AGAIN = 2 * monitor.PING_EVERY + monitor.RECONNECT_DELAY
#: The long job's queue has a 60 s lease, so its heartbeats (every 20 s) cannot be what
#: notices the lost lock within STOP_WITHIN: only the pub/sub event can.
LONG_QUEUE = "long"
#: No worker watches it: the long job waits there until the test has seen it stopped.
PARKED_QUEUE = "parked"


@dataclass
class Producer:
    """Puts jobs through the proxy; a put that raised is retried with the same jid."""

    client: Client
    jids: list[str] = field(default_factory=list)
    attempts: int = 0
    errors: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        """Put until stopped; each jid is retried until acknowledged."""
        rng = random.Random(7)
        while not self.stop.is_set():
            jid = f"produced-{uuid.uuid4().hex[:12]}"
            data = {"args": [], "kwargs": {"ms": rng.uniform(5, 20)}}
            while True:
                self.attempts += 1
                try:
                    self.client.queue("q").put("faults.work", data, jid=jid)
                except (redis.ConnectionError, redis.TimeoutError) as exc:
                    self.errors.append(type(exc).__name__)
                    time.sleep(0.1)
                    continue
                break
            self.jids.append(jid)
            time.sleep(PUT_EVERY)

    @property
    def retried(self) -> int:
        """Puts sent more than once."""
        return self.attempts - len(self.jids)


def flow_through_fault(
    server: RedisServer, proxy: FaultProxy, fleets: Callable[..., Fleet],
    figures: dict[str, Any], fault: Callable[[], None], workers: int = WORKERS,
    concurrency: int = 1, silent: bool = False,
) -> None:
    """Jobs flow through the proxy while `fault()` runs; heal; check everything.

    `silent`: the fault leaves connections half-open (a blackhole), which the workers
    notice only by their PINGs going unanswered.
    """
    client = qless_client(server)
    compressed_time(client)
    client.config.put(f"{LONG_QUEUE}-heartbeat", 60)
    rng = random.Random(3)
    # N slots drain N times faster: jobs N times longer leave work for every worker to
    # come back to after the heal.
    acked = put_jobs(client, JOBS, lambda n: {"ms": rng.uniform(10, 30) * concurrency})
    fleet = fleets(proxy.url, workers, "q", LONG_QUEUE, "--poll-interval", "0.2",
                   env={"QLESS_FAULTS_OPTIONS": json.dumps(CLIENT_OPTIONS)})
    pids = sorted(fleet.pids())
    wait_for(lambda: completed(client) >= 50, 30, what="the workers' first jobs")
    # No retries inside redis-py: every failed put reaches the producer, which puts again.
    producer = Producer(Client(redis.Redis.from_url(proxy.url, retry=Retry(NoBackoff(), 0),
                                                    **CLIENT_OPTIONS)))
    putter = threading.Thread(target=producer.run, name="producer")
    putter.start()
    # Its connection is open before the fault, so a put can be applied and go unanswered.
    wait_for(lambda: len(producer.jids) >= 5, 10, what="the producer's first puts")
    in_flight = int(client.redis.zcard("ql:q:q-locks"))
    fault()
    locked_at_heal = locked(client)
    left_at_heal = JOBS - completed(client)
    proxy.heal()
    healed = time.time()
    time.sleep(1.0)
    producer.stop.set()
    putter.join(30)
    every = acked + producer.jids
    drained = settle(lambda: completed(client) >= len(every), 30)
    drained_after = round(time.time() - healed, 1)
    stuck = "" if drained else late_jobs(client, every)
    recovery = first_pops_after(fleet, healed, locked_at_heal)
    if silent:
        # Every monitor listens again by then (the drain after the heal may end sooner).
        time.sleep(max(healed + LISTENING_AGAIN - time.time(), 0))
    stopped_after = lock_loss_stop(client, fleet)
    result = outcome(client, [*every, stopped_after[0]], fleet)
    re_puts = applied_re_puts(client, producer.jids)
    duplicates = result.duplicates - 1  # the long job runs again after its move, by design
    logs = fleet.output()
    figures.update(result.figures(), duplicates=duplicates, in_flight=in_flight,
                   left_at_heal=left_at_heal, drained_after_heal=drained_after,
                   produced=len(producer.jids),
                   put_retries=producer.retried, re_puts_applied=re_puts,
                   recovery=max(recovery.values(), default=None),
                   lock_loss_stop=stopped_after[1], restarts=fleet.restarts,
                   redis_errors_logged=logs.count("Redis error"), proxy_resets=proxy.stats.reset,
                   proxy_dropped=proxy.stats.dropped)
    assert left_at_heal > 0, "the drain ended before the heal: the fault missed the flow"
    assert drained, f"not complete 30 s after the heal: {stuck}"
    assert fleet.restarts == 0 and sorted(fleet.live_pids()) == pids
    assert "unexpected error" not in logs
    assert "Traceback" not in logs
    assert result.lost == []
    assert result.overlaps == []
    assert result.running == 0
    assert result.jobs == result.audit.jobs, "a retried put left more than one job"
    # The snapshot may miss a pop made just after it; the bound is what the workers can hold.
    most_in_flight = workers * most_held(concurrency)
    assert in_flight <= most_in_flight
    assert duplicates <= most_in_flight + re_puts
    assert result.failed_retries == 0, "a job was handed out until its retries ran out"
    assert set(recovery) == set(pids), f"a worker never popped after the heal: {recovery}"
    assert max(recovery.values()) <= RECOVERY
    assert stopped_after[1] <= STOP_WITHIN
    assert result.audit.clean, result.audit.summary()


def late_jobs(client: Client, jids: list[str]) -> str:
    """The jobs not complete yet, with their state and history (at most five)."""
    late = [job for job in client.get_jobs(jids) if job.state != "complete"][:5]
    return "; ".join(f"{job.jid} {job.state} {job.worker!r} {job.history}" for job in late)


def locked(client: Client) -> set[str]:
    """jids of queue q's jobs leased right now."""
    members: list[bytes] = client.redis.zrange("ql:q:q-locks", 0, -1)  # type: ignore[assignment]
    return {member.decode() for member in members}


def first_pops_after(fleet: Fleet, healed: float, held: set[str]) -> dict[int, float]:
    """Per worker pid: seconds from the heal to its first start of a job popped after it.

    A job locked at the heal was popped before it (it may have been held ahead); any other
    job started after the heal came from a pop that reached Redis after the heal.
    """
    first: dict[int, float] = {}
    for entry in ledger.read(fleet.ledger_dir):
        if entry.event == "start" and entry.t >= healed and entry.jid not in held:
            first.setdefault(entry.pid, round(entry.t - healed, 2))
    return first


def lock_loss_stop(client: Client, fleet: Fleet) -> tuple[str, float]:
    """Run a long job, move it away directly in Redis; seconds until its worker stopped it.

    It moves to a queue no worker watches, so no second run can start before the stop (a
    `timeout` would hand it out at once, racing the stop); once stopped it is moved back.
    """
    jid = client.queue(LONG_QUEUE).put("faults.long_once", {"args": [], "kwargs": {"seconds": 30}},
                                       jid=f"long-{uuid.uuid4().hex[:8]}")

    def entry(event: str) -> ledger.Entry | None:
        return next((e for e in ledger.read(fleet.ledger_dir)
                     if e.jid == jid and e.event == event), None)

    wait_for(lambda: entry("start"), 15, every=0.05, what="the long job's start")
    time.sleep(0.2)
    job = client.get_job(jid)
    assert job is not None and job.state == "running"
    sent = time.time()
    job.move(PARKED_QUEUE)
    aborted = wait_for(lambda: entry("abort"), 30, every=0.05, what="the long job's abort")
    job.move(LONG_QUEUE)
    wait_for(lambda: (found := client.get_job(jid)) is not None and found.state == "complete",
             15, what="the long job's second run")
    return jid, round(aborted.t - sent, 2)


def applied_re_puts(client: Client, jids: list[str]) -> int:
    """Jobs put more than once (a put applied whose answer was lost, then retried)."""
    return sum(1 for job in client.get_jobs(jids)
               if sum(1 for entry in job.history if entry.what == "put") > 1)


def test_latency_slows_the_flow_and_loses_nothing(
    proxy: FaultProxy, server: RedisServer, fleets: Callable[..., Fleet],
    figures: dict[str, Any], concurrency: int,
) -> None:
    def fault() -> None:
        proxy.add_latency(0.1, 0.2)
        before = completed(qless_client(server))
        time.sleep(6)
        figures["jobs_per_s_in_latency"] = round((completed(qless_client(server)) - before) / 6)

    flow_through_fault(server, proxy, fleets, figures, fault, concurrency=concurrency)


def test_blackhole_longer_than_socket_timeout_then_heal(
    proxy: FaultProxy, server: RedisServer, fleets: Callable[..., Fleet],
    figures: dict[str, Any], concurrency: int,
) -> None:
    def fault() -> None:
        proxy.blackhole()
        time.sleep(SOCKET_TIMEOUT + 4)

    flow_through_fault(server, proxy, fleets, figures, fault, concurrency=concurrency,
                       silent=True)


@AT_EACH_CONCURRENCY
def test_replies_blackholed_then_heal(
    proxy: FaultProxy, server: RedisServer, fleets: Callable[..., Fleet],
    figures: dict[str, Any], concurrency: int,
) -> None:
    # Commands still reach Redis but no answer comes back: puts, pops and completions are
    # applied unacknowledged. Retried puts must leave one job each; popped jobs nobody
    # received come back when their lease runs out.
    def fault() -> None:
        proxy.blackhole(replies_only=True)
        time.sleep(SOCKET_TIMEOUT + 4)

    flow_through_fault(server, proxy, fleets, figures, fault, concurrency=concurrency,
                       silent=True)
    assert figures["re_puts_applied"] >= 1, "no put was applied unanswered and retried"


def test_every_connection_reset_then_heal(
    proxy: FaultProxy, server: RedisServer, fleets: Callable[..., Fleet],
    figures: dict[str, Any], concurrency: int,
) -> None:
    def fault() -> None:
        proxy.reset_all()
        time.sleep(3)

    flow_through_fault(server, proxy, fleets, figures, fault, concurrency=concurrency)


def test_one_worker_gets_back_the_jobs_whose_completion_a_reset_lost(
    proxy: FaultProxy, server: RedisServer, fleets: Callable[..., Fleet],
    figures: dict[str, Any], concurrency: int,
) -> None:
    # The completions sent during the reset are lost, so those jobs' leases run out and,
    # with one worker, the same worker pops them again (after the 1 s grace period, while
    # the lock_lost notice of their expiry is still fresh): it must run them, not drop
    # them as lost until qless fails them for exhausted retries.
    def fault() -> None:
        proxy.reset_all()
        time.sleep(1)

    flow_through_fault(server, proxy, fleets, figures, fault, workers=1,
                       concurrency=concurrency)
