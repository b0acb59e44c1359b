"""Fencing: a job whose lease the worker cannot renew is stopped before its lock expires.

The worker reaches Redis through a fault proxy (tests/faults/proxy.py) that, once the job
runs and its lease has been renewed, drops everything, drops only Redis' replies, or
resets every connection: each renewal then fails with a TimeoutError or ConnectionError.
The job must be interrupted before the expiry of the last renewal the worker saw
acknowledged (by at least most of the margin), and neither completed nor failed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
import redis.sentinel

from django_qless.connection import reset_clients
from django_qless.core import Client
from django_qless.worker import Worker
from django_qless.worker.fence import Fence, FenceWatch, margin_for
from django_qless.worker.monitor_redis import DEFAULT_TIMEOUT, monitor_redis, monitor_timeout
from django_qless.worker.options import WorkerOptions
from django_qless.worker.pool import build_worker
from tests.faults.proxy import FaultProxy
from tests.redis_harness import RedisServer
from tests.support import wait_for
from tests.workerapp.qless_jobs import STOPS

from .conftest import SignalLog

#: The queue's lease in these tests (seconds); the fence stops a job `margin_for(LEASE)`
#: before its lock expires.
LEASE = 2
#: How late the fence may land after its deadline on a loaded machine (its thread wakes
#: up, the interruption reaches the job's next bytecode).
LATE = 0.3


def test_the_margin_is_a_tenth_of_the_lease_at_least_half_a_second_at_most_a_quarter() -> None:
    assert margin_for(60) == 6
    assert margin_for(3) == 0.5
    assert margin_for(1) == 0.25


def test_a_renewal_counts_from_when_it_was_sent_and_a_truncated_reply_errs_early() -> None:
    fence = Fence("j", lease=3, expires_in=3, sent=100.0)
    assert fence.deadline == 102.5
    # Sent at 101, the reply came back late: the expiry still counts from 101. The
    # reply's whole seconds (2.4 s after `now`) agree with the 3 s lease read before.
    fence.renewed(101.0, 2.4, lease=3)
    assert (fence.expires_at, fence.deadline) == (104.0, 103.5)
    # A lease that does not agree with the reply (it changed meanwhile): the reply wins.
    fence.renewed(102.0, 0.6, lease=3)
    assert fence.expires_at == pytest.approx(102.6)
    assert fence.due(102.2) and not fence.due(102.0)
    assert fence.unrenewed_for(103.0) == 1.0


@pytest.fixture
def proxy(redis_server: RedisServer) -> Iterator[FaultProxy]:
    """A fault proxy in front of the suite's redis-server."""
    started = FaultProxy("127.0.0.1", redis_server.port).start()
    yield started
    started.close()


@pytest.fixture
def direct(redis_server: RedisServer) -> Client:
    """A client that reaches Redis directly (the test's eyes)."""
    return Client(redis.Redis.from_url(redis_server.url))


def start_worker(settings: Any, proxy: FaultProxy, concurrency: int = 1
                 ) -> tuple[Worker, threading.Thread]:
    """A worker on queue q that reaches Redis through the proxy, running in a thread."""
    settings.QLESS = {"URL": proxy.url, "OPTIONS": {"socket_timeout": 1},
                      "WORKER": {"POLL_INTERVAL": 0.2}}
    reset_clients()
    worker = build_worker(WorkerOptions.from_settings(queues=("q",), handle_signals=False,
                                                      concurrency=concurrency))
    thread = threading.Thread(target=worker.run, name="fenced-worker", daemon=True)
    thread.start()
    return worker, thread


def lock_expiry(direct: Client, jid: str) -> float:
    """When the job's lock expires, as stored in Redis (wall clock)."""
    score = direct.redis.zscore("ql:q:q-locks", jid)
    assert score is not None
    return float(score)


def test_the_watch_fires_an_earlier_deadline_on_time_while_it_sleeps_to_a_later_one() -> None:
    """The watch is woken only for deadlines before the one it sleeps to: a job started
    with a later deadline costs nothing, one with an earlier deadline (or moved earlier by
    a renewal to a shorter lease) still fires on time."""
    fired: dict[str, float] = {}
    watch = FenceWatch("test")
    watch.start()
    try:
        def note(fence: Fence) -> None:
            fired[fence.jid] = time.monotonic()

        now = time.monotonic()
        late = Fence("late", lease=60, expires_in=60, sent=now)  # fires in 54 s
        watch.watch(late, note)
        later = Fence("later", lease=60, expires_in=90, sent=now)
        watch.watch(later, note)
        soon = Fence("soon", lease=2, expires_in=0.8, sent=now)  # fires in 0.3 s
        watch.watch(soon, note)
        moving = Fence("moving", lease=60, expires_in=60, sent=now)
        watch.watch(moving, note)
        moving.renewed(now, 6.7, lease=None)  # a shorter lease: fires in 0.7 s (margin 6)
        watch.moved(moving.deadline)
        wait_for(lambda: "moving" in fired, timeout=3)
        assert fired["soon"] - soon.deadline < LATE
        assert fired["moving"] - moving.deadline < LATE
        assert "late" not in fired and "later" not in fired
    finally:
        watch.halt()
        watch.join(2)


@pytest.mark.parametrize("fault", ["blackhole", "replies", "reset"])
def test_a_job_whose_lease_cannot_be_renewed_is_stopped_before_its_lock_expires(
    fault: str, proxy: FaultProxy, direct: Client, settings: Any, sent: SignalLog,
) -> None:
    direct.config.put("q-heartbeat", LEASE)
    jid = direct.queue("q").put("worker.until_stopped", {"args": [], "kwargs": {}})
    STOPS.clear()
    worker, thread = start_worker(settings, proxy)
    try:
        wait_for(lambda: worker.monitor.heartbeats >= 1, 10, every=0.01,
                 what="the first renewal")
        # Cut right after a renewal was acknowledged: the lock expires one lease after it.
        faults: dict[str, Callable[[], None]] = {
            "blackhole": proxy.blackhole, "reset": proxy.reset_all,
            "replies": lambda: proxy.blackhole(replies_only=True)}
        faults[fault]()
        cut = time.time()
        expiry = lock_expiry(direct, jid)
        stopped = wait_for(lambda: [s for s in STOPS if s[0] == "stopped"], 10, every=0.01,
                           what="the fence to stop the job")[0]
    finally:
        worker.stop.request("test over")
        thread.join(30)
    _event, how, when = stopped
    assert how == "LeaseExpired"
    # A renewal sent just before the cut may have moved the lock further in Redis: the
    # expiry read after the cut is the latest the worker could count on, or later.
    assert when <= expiry - margin_for(LEASE) + LATE
    assert when < expiry
    assert when > cut
    # Neither completed nor failed by this worker: the lock is simply left to expire.
    job = direct.get_job(jid)
    assert job is not None and job.state == "running"
    assert worker.outcomes["lock lost"] == 1
    assert worker.outcomes["completed"] == worker.outcomes["failed"] == 0
    (lost,) = sent.of("job_lock_lost")
    assert lost["reason"].startswith("fenced: its lease could not be renewed for")
    assert not thread.is_alive()


def fence_three(settings: Any, proxy: FaultProxy, direct: Client, klass: str
                ) -> tuple[Worker, list[tuple[str, float]]]:
    """Three jobs of `klass` at --concurrency 3, cut off from Redis once each was renewed:
    the worker once stopped, and how and when each job was stopped; checks that each stop
    came after the cut and before its lock's expiry minus the margin, and that every job
    was left to expire, neither completed nor failed."""
    direct.config.put("q-heartbeat", LEASE)
    jids = [direct.queue("q").put(klass, {"args": [], "kwargs": {}}) for _ in range(3)]
    STOPS.clear()
    worker, thread = start_worker(settings, proxy, concurrency=3)
    try:
        # Every job renewed once (in one pipelined round trip per pass).
        wait_for(lambda: worker.monitor.heartbeats >= 3, 10, every=0.01,
                 what="a renewal of each job")
        proxy.blackhole()
        cut = time.time()
        expiry = min(lock_expiry(direct, jid) for jid in jids)
        wait_for(lambda: len([s for s in STOPS if s[0] == "stopped"]) == 3, 10, every=0.01,
                 what="the fence to stop every job")
    finally:
        worker.stop.request("test over")
        thread.join(30)
    stopped = [(how, when) for event, how, when in STOPS if event == "stopped"]
    for _, when in stopped:
        assert cut < when < expiry
        assert when <= expiry - margin_for(LEASE) + LATE
    for jid in jids:
        job = direct.get_job(jid)
        assert job is not None and job.state == "running"  # left to expire
    assert worker.outcomes["lock lost"] == 3
    assert worker.outcomes["completed"] == worker.outcomes["failed"] == 0
    assert not thread.is_alive()
    return worker, stopped


def test_at_concurrency_n_every_job_whose_lease_cannot_be_renewed_is_fenced_in_time(
    proxy: FaultProxy, direct: Client, settings: Any, sent: SignalLog,
) -> None:
    _, stopped = fence_three(settings, proxy, direct, "worker.until_stopped")
    assert [how for how, _ in stopped] == ["LeaseExpired"] * 3
    assert len(sent.of("job_lock_lost")) == 3


def test_at_concurrency_n_every_loop_job_whose_lease_cannot_be_renewed_is_fenced_in_time(
    proxy: FaultProxy, direct: Client, settings: Any,
) -> None:
    """`async def` jobs the event loop runs itself (no receiver of the job signals here),
    each cancelled by its own fence."""
    worker, stopped = fence_three(settings, proxy, direct, "worker.auntil_stopped")
    assert {how for event, how, _ in STOPS if event == "start"} == {f"qless-loop-{worker.name}"}
    assert [how for how, _ in stopped] == ["CancelledError"] * 3


def test_a_fenced_job_that_swallows_the_interruption_and_returns_is_not_completed(
    proxy: FaultProxy, direct: Client, settings: Any, sent: SignalLog,
) -> None:
    direct.config.put("q-heartbeat", LEASE)
    jid = direct.queue("q").put("worker.stubborn", {"args": [], "kwargs": {}})
    STOPS.clear()
    worker, thread = start_worker(settings, proxy)
    try:
        wait_for(lambda: worker.monitor.heartbeats >= 1, 10, every=0.01,
                 what="the first renewal")
        proxy.blackhole()
        wait_for(lambda: [s for s in STOPS if s[0] == "stopped"], 10, every=0.01,
                 what="the fence")
        # Redis is reachable again before the job returns: a completion would go through.
        proxy.heal()
        wait_for(lambda: [s for s in STOPS if s[0] == "end"], 15, every=0.01,
                 what="the job to return")
        wait_for(lambda: worker.outcomes["lock lost"] == 1, 15, what="the job's outcome")
    finally:
        worker.stop.request("test over")
        thread.join(30)
    assert [(event, how) for event, how, _ in STOPS] == [
        ("start", ""), ("stopped", "LeaseExpired"), ("end", "")]
    job = direct.get_job(jid)
    assert job is not None and job.state == "running"  # returned, yet not completed
    assert worker.outcomes["completed"] == 0
    assert sent.of("job_completed") == []


def test_the_monitor_calls_time_out_within_a_quarter_of_the_lease(
    proxy: FaultProxy, direct: Client, settings: Any,
) -> None:
    direct.config.put("q-heartbeat", LEASE)
    worker, thread = start_worker(settings, proxy)
    try:
        wait_for(lambda: worker.monitor.wait_subscribed(0.1), 10, what="the worker to start")
        kwargs = worker.monitor_client.redis.connection_pool.connection_kwargs
        assert kwargs["socket_timeout"] == monitor_timeout(LEASE) == LEASE / 4
        assert kwargs["socket_connect_timeout"] == LEASE / 4
        proxy.blackhole()
        started = time.monotonic()
        with pytest.raises(redis.TimeoutError):
            worker.monitor_client.redis.ping()
        # One immediate retry on a new connection (which the blackhole swallows too).
        assert time.monotonic() - started < 3 * LEASE / 4
    finally:
        worker.stop.request("test over")
        thread.join(30)
    # The application's own connections keep their configured timeout.
    assert worker.client.redis.connection_pool.connection_kwargs["socket_timeout"] == 1


def test_the_monitor_pool_keeps_the_server_and_options_and_only_cuts_the_timeouts() -> None:
    base = redis.Redis.from_url("redis://:secret@127.0.0.1:6390/3", socket_timeout=0.2)
    own = monitor_redis(base).connection_pool
    assert own is not base.connection_pool
    kwargs = own.connection_kwargs
    assert (kwargs["host"], kwargs["port"], kwargs["db"], kwargs["password"]) == (
        "127.0.0.1", 6390, 3, "secret")
    assert kwargs["socket_timeout"] == 0.2  # a lower configured timeout is kept
    assert kwargs["socket_connect_timeout"] == DEFAULT_TIMEOUT
    sentinel = redis.sentinel.Sentinel([("127.0.0.1", 1)])  # type: ignore[no-untyped-call]
    primary = sentinel.master_for("primary", socket_timeout=30)  # type: ignore[no-untyped-call]
    managed = monitor_redis(primary)
    pool = managed.connection_pool
    assert isinstance(pool, redis.sentinel.SentinelConnectionPool)
    assert pool.service_name == "primary"
    assert pool.connection_kwargs["socket_timeout"] == DEFAULT_TIMEOUT
