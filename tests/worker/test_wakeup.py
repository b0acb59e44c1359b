"""Idle workers wake on puts to their queues and at due times, not on a polling interval."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import redis

from django_qless.core import Client
from django_qless.worker import Worker
from django_qless.worker.wakeup import RELISTEN, Waker
from tests.support import wait_for

from .conftest import in_thread

Ledger = Callable[[], list[dict[str, Any]]]
#: Generous bound for CI; the benchmark records the real figure.
LATENCY = 0.2


def wait_until_idle(redis_client: redis.Redis) -> None:
    """Until the worker listens on ql:log (it does so only when its queues are empty)."""
    wait_for(lambda: dict(redis_client.pubsub_numsub("ql:log")).get("ql:log", 0) >= 1)
    time.sleep(0.3)  # let it settle into its blocking read


def test_idle_worker_picks_up_a_put_within_milliseconds(
    qless: Client, redis_client: redis.Redis, run_worker: Callable[..., Worker], ledger: Ledger,
) -> None:
    put_at: list[float] = []

    def put_later() -> None:
        wait_until_idle(redis_client)
        put_at.append(time.time())
        qless.queue("q").put("worker.mark", {"args": ["late"], "kwargs": {}})

    in_thread(put_later)
    worker = run_worker("q", burst=False, max_jobs=1, poll_interval=5)
    latency = ledger()[0]["t"] - put_at[0]
    assert 0 <= latency < LATENCY
    assert worker.waker.wakeups == {"event": 1, "due": 0, "poll": 0, "lost": 0}


def test_puts_to_other_queues_do_not_wake_the_worker(
    qless: Client, redis_client: redis.Redis, run_worker: Callable[..., Worker], ledger: Ledger,
) -> None:
    def put_later() -> None:
        wait_until_idle(redis_client)
        qless.queue("other").put("worker.mark", {"args": ["other"], "kwargs": {}})
        time.sleep(0.3)
        qless.queue("q").put("worker.mark", {"args": ["mine"], "kwargs": {}})

    in_thread(put_later)
    worker = run_worker("q", burst=False, max_jobs=1, poll_interval=5)
    assert [entry["tag"] for entry in ledger()] == ["mine"]
    assert worker.waker.wakeups == {"event": 1, "due": 0, "poll": 0, "lost": 0}


def test_idle_worker_wakes_when_a_delayed_job_comes_due(
    qless: Client, redis_client: redis.Redis, run_worker: Callable[..., Worker], ledger: Ledger,
) -> None:
    due_at: list[float] = []

    def put_delayed() -> None:
        wait_until_idle(redis_client)
        due_at.append(time.time() + 0.5)
        qless.queue("q").put("worker.mark", {"args": ["delayed"], "kwargs": {}}, delay=0.5)

    in_thread(put_delayed)
    worker = run_worker("q", burst=False, max_jobs=1, poll_interval=5)
    ran_at = ledger()[0]["t"]
    assert due_at[0] <= ran_at < due_at[0] + LATENCY
    # The put itself woke it once (to learn the due time), then the due time did.
    assert worker.waker.wakeups["due"] == 1
    assert worker.waker.wakeups["poll"] == 0


def test_idle_worker_wakes_for_the_next_recurring_spawn(
    qless: Client, redis_client: redis.Redis, run_worker: Callable[..., Worker], ledger: Ledger,
) -> None:
    due = time.time() + 0.6
    qless.queue("q").recur("worker.mark", {"args": ["tick"], "kwargs": {}}, interval=60,
                           offset=0.6)
    worker = run_worker("q", burst=False, max_jobs=1, poll_interval=5)
    assert due <= ledger()[0]["t"] < due + LATENCY
    assert worker.waker.wakeups["due"] == 1


def test_busy_worker_stops_listening(
    qless: Client, redis_client: redis.Redis, run_worker: Callable[..., Worker], ledger: Ledger,
) -> None:
    listeners: list[int] = []

    def burst_of_jobs() -> None:
        wait_until_idle(redis_client)
        for n in range(5):
            qless.queue("q").put("worker.sleep", {"args": [0.1], "kwargs": {}}, jid=f"job{n}")
        wait_for(lambda: any(entry["jid"] == "job3" for entry in ledger()))
        listeners.append(dict(redis_client.pubsub_numsub("ql:log"))["ql:log"])

    in_thread(burst_of_jobs)
    run_worker("q", burst=False, max_jobs=5, poll_interval=5)
    assert listeners == [0]


def test_waker_ignores_due_times_a_pop_could_not_serve(qless: Client) -> None:
    # A paused queue keeps its due job: sleeping until that past time would spin.
    waker = Waker(qless, ["q"], 5.0, lambda: False)
    qless.queue("q").put("worker.noop", {"args": [], "kwargs": {}}, delay=0.5)
    now = qless.now()
    wait, reason = waker._timeout(round_started=now)
    assert reason == "due" and 0.4 < wait <= 0.51
    # A pop round that started after the due time should have taken the job (not
    # subscribed, the worker polls every RELISTEN seconds).
    assert waker._timeout(round_started=now + 1) == (RELISTEN, "poll")


def test_a_waker_that_cannot_read_due_times_sleeps_no_longer_than_it_may(
    qless: Client, monkeypatch: Any,
) -> None:
    waker = Waker(qless, ["q"], 30.0, lambda: False)

    def unreachable(queues: Any) -> None:
        raise redis.TimeoutError("Timeout reading from the network")

    monkeypatch.setattr(qless, "next_due", unreachable)
    # Not subscribed (the network failed): the worker must poll again soon, not in 30 s.
    assert waker._timeout(round_started=qless.now()) == (RELISTEN, "poll")
    assert waker.listen()
    assert waker._timeout(round_started=qless.now()) == (30.0, "poll")  # woken by events
    waker.close()


def test_waker_wakes_only_for_its_own_queues(qless: Client) -> None:
    waker = Waker(qless, ["q", "r"], 5.0, lambda: False)

    def relevant(data: str) -> bool:
        return waker._relevant({"type": "message", "channel": "ql:log", "data": data})

    assert relevant('{"jid":"a","event":"put","queue":"r"}')
    assert not relevant('{"jid":"a","event":"put","queue":"other"}')
    assert relevant('{"jid":"a","event":"advanced","queue":"other","to":"q"}')
    assert not relevant('{"jid":"a","event":"completed","queue":"q"}')
    assert relevant('{"jid":"a","event":"lock_lost","worker":"w"}')
    assert not relevant("not json")


def test_a_long_job_stops_the_listening_meanwhile(
    qless: Client, redis_client: redis.Redis, run_worker: Callable[..., Worker], ledger: Ledger,
    monkeypatch: Any,
) -> None:
    from django_qless.worker import monitor  # noqa: PLC0415

    monkeypatch.setattr(monitor, "LONG_JOB", 0.3)
    listeners: list[int] = []

    def put_long_job() -> None:
        wait_until_idle(redis_client)
        qless.queue("q").put("worker.sleep", {"args": [1.5], "kwargs": {}})
        wait_for(lambda: ledger())
        listeners.append(dict(redis_client.pubsub_numsub("ql:log"))["ql:log"])
        time.sleep(0.8)
        listeners.append(dict(redis_client.pubsub_numsub("ql:log"))["ql:log"])

    in_thread(put_long_job)
    run_worker("q", burst=False, max_jobs=1, poll_interval=5)
    assert listeners == [1, 0]


def test_a_silent_event_connection_ends_the_sleep_and_closes_the_pools_idle_connections(
    qless: Client, redis_client: redis.Redis, monkeypatch: Any,
) -> None:
    monkeypatch.setattr("django_qless.worker.wakeup.PING_EVERY", 0.1)
    waker = Waker(qless, ["q"], 30.0, lambda: False)
    assert waker.listen()
    # A connection idle in the client's pool: after a network fault it may be half-open.
    pool = qless.redis.connection_pool
    idle = pool.get_connection()
    idle.send_command("CLIENT", "ID")
    idle_id = idle.read_response()
    pool.release(idle)
    assert waker._pubsub is not None
    monkeypatch.setattr(waker._pubsub, "ping", lambda *args, **kwargs: None)  # never arrives
    started = time.monotonic()
    assert waker.sleep(qless.now()) == "lost"
    assert time.monotonic() - started < 1.0
    assert not waker.listening and waker._pubsub is None
    # The pool's idle connections were closed with it: each connects again when next used.
    wait_for(lambda: str(idle_id) not in {c["id"] for c in redis_client.client_list()},
             what="the idle connection closed")
    # Not subscribed: the next sleep is bounded, so the worker tries to subscribe again soon.
    assert waker._timeout(round_started=qless.now()) == (RELISTEN, "poll")  # not the 30 s
    waker.close()


def test_an_unconfirmed_subscription_is_given_up_and_tried_again_with_one_warning(
    qless: Client, monkeypatch: Any, caplog: Any,
) -> None:
    # A half-open connection (a blackhole) swallows the SUBSCRIBE: no confirmation comes.
    monkeypatch.setattr("django_qless.worker.wakeup.SUBSCRIBE_WAIT", 0.3)
    monkeypatch.setattr(redis.client.PubSub, "subscribe", lambda *args, **kwargs: None)
    waker = Waker(qless, ["q"], 30.0, lambda: False)
    caplog.set_level("DEBUG", logger="django_qless.worker")
    started = time.monotonic()
    assert not waker.listen()
    assert time.monotonic() - started < 1.0  # given up at SUBSCRIBE_WAIT, not hanging on
    assert not waker.listen() and not waker.listening
    failures = [r for r in caplog.records if "cannot listen" in r.getMessage()]
    assert [r.levelname for r in failures] == ["WARNING", "DEBUG"]
    monkeypatch.undo()
    assert waker.listen() and waker.listening
    assert any(r.levelname == "INFO" and "listening for new jobs again" in r.getMessage()
               for r in caplog.records)
    waker.close()


def test_an_answered_ping_keeps_the_sleep_going(qless: Client, monkeypatch: Any) -> None:
    monkeypatch.setattr("django_qless.worker.wakeup.PING_EVERY", 0.1)
    waker = Waker(qless, ["q"], 1.0, lambda: False)
    assert waker.listen()
    assert waker.sleep(qless.now()) == "poll"  # about ten PINGs, all answered
    assert waker.listening and waker.wakeups["lost"] == 0
    waker.close()
