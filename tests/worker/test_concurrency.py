"""`qless_worker --concurrency N`: N jobs at once per process, every guarantee kept per job.

Real worker subprocesses on the suite's redis-server, as in `test_shutdown`.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
import redis
from django.db import connections
from django.db.backends.signals import connection_created

from django_qless.core import Client
from django_qless.core.presence import listed
from django_qless.worker import Worker, WorkerOptions
from django_qless.worker.fence import FenceWatch
from django_qless.worker.held import Held
from django_qless.worker.interrupt import Interrupter
from django_qless.worker.pool import PoolWorker
from django_qless.worker.renewals import Renewals
from django_qless.worker.round_trip import run_all
from django_qless.worker.state import StopState
from tests.support import wait_for

from .conftest import WorkerProcess, in_thread, job_state
from .test_db import file_db  # noqa: F401 - the fixture

Ledger = Callable[[], list[dict[str, Any]]]
Spawn = Callable[..., WorkerProcess]
Put = Callable[..., str]


def events(ledger: Ledger, event: str) -> dict[str, dict[str, Any]]:
    """The ledger's entries of one kind, by jid."""
    return {entry["jid"]: entry for entry in ledger() if entry["event"] == event}


def most_at_once(ledger: Ledger) -> tuple[int, list[float]]:
    """The most jobs that ran at the same time, and every start and end time (sorted)."""
    moments = sorted([(e["t"], 1) for e in events(ledger, "start").values()]
                     + [(e["t"], -1) for e in events(ledger, "end").values()])
    running, most = 0, 0
    for _, step in moments:
        running += step
        most = max(most, running)
    return most, [when for when, _ in moments]


def all_state(qless: Client, jids: list[str], state: str) -> bool:
    """True once every job is in `state`."""
    return all(job_state(qless, jid) == state for jid in jids)


@pytest.mark.parametrize("klass", ["worker.nap", "worker.anap"])
def test_n_jobs_really_overlap(qless: Client, put: Put, spawn: Spawn, ledger: Ledger,
                               klass: str) -> None:
    jids = [put(klass, 1.0) for _ in range(8)]
    worker = spawn("q", "--concurrency", "8", "--burst")
    assert worker.wait(30) == 0, worker.output()
    assert all_state(qless, jids, "complete"), worker.output()
    starts, ends = events(ledger, "start"), events(ledger, "end")
    assert set(starts) == set(ends) == set(jids)
    # Serially they would take 8 s; at once, all start before the first one ends.
    assert max(s["t"] for s in starts.values()) < min(e["t"] for e in ends.values())
    assert max(e["t"] for e in ends.values()) - min(s["t"] for s in starts.values()) < 4.0
    assert len({entry["pid"] for entry in starts.values()}) == 1  # one process


def test_never_more_than_n_at_once_sync_and_async_together(
    qless: Client, put: Put, spawn: Spawn, ledger: Ledger,
) -> None:
    jids = [put("worker.nap" if i % 2 else "worker.anap", 0.5) for i in range(12)]
    # A long poll: a slot that frees up is refilled at once, not at the next poll.
    worker = spawn("q", "--concurrency", "4", "--burst", "--poll-interval", "30")
    assert worker.wait(60) == 0, worker.output()
    assert all_state(qless, jids, "complete"), worker.output()
    most, moments = most_at_once(ledger)
    assert most == 4  # both kinds share the 4 slots, and fill them
    assert moments[-1] - moments[0] < 4.0  # 3 rounds of 0.5 s, not 3 polls


@pytest.mark.parametrize("klass", ["worker.nap", "worker.anap"])
def test_a_canceled_job_stops_alone_and_the_others_complete(
    qless: Client, put: Put, spawn: Spawn, ledger: Ledger, klass: str,
) -> None:
    victim = put(klass, 30)
    others = [put(klass, 2.0) for _ in range(3)]
    worker = spawn("q", "--concurrency", "4")
    wait_for(lambda: len(events(ledger, "start")) == 4, timeout=15)
    qless.cancel(victim)  # the admin's cancel: qless publishes `canceled` to the worker
    wait_for(lambda: victim in events(ledger, "stopped"), timeout=10)
    assert events(ledger, "stopped")[victim]["how"] in ("LockLost", "CancelledError")
    wait_for(lambda: all_state(qless, others, "complete"), timeout=15)
    assert not set(others) & set(events(ledger, "stopped"))
    assert qless.get_job(victim) is None  # canceled, and nothing written back for it
    assert f"job {victim} stopped, its result discarded" in worker.output()
    worker.signal(signal.SIGTERM)
    assert worker.wait(15) == 0, worker.output()


@pytest.mark.parametrize("klass", ["worker.nap_limited", "worker.anap_limited"])
def test_a_time_limit_stops_its_job_alone(
    qless: Client, put: Put, spawn: Spawn, ledger: Ledger, klass: str,
) -> None:
    limited = put(klass, 30)
    others = [put("worker.nap", 2.0), put("worker.anap", 2.0)]
    worker = spawn("q", "--concurrency", "3", "--burst")
    assert worker.wait(30) == 0, worker.output()
    job = qless.get_job(limited)
    assert job is not None and job.state == "failed"
    assert job.failure is not None and job.failure.group == "q-TimeLimitExceeded"
    stopped = events(ledger, "stopped")[limited]
    assert stopped["t"] - events(ledger, "start")[limited]["t"] < 3.0
    assert all_state(qless, others, "complete")


def test_sigterm_waits_for_the_running_jobs_then_hands_back_the_rest(
    qless: Client, put: Put, spawn: Spawn, ledger: Ledger,
) -> None:
    short = [put("worker.nap", 1.0), put("worker.anap", 1.0)]
    long = [put("worker.nap", 60, retries=3), put("worker.anap", 60, retries=3)]
    waiting = put("worker.noop")
    worker = spawn("q", "--concurrency", "4", "--shutdown-timeout", "2")
    wait_for(lambda: len(events(ledger, "start")) == 4, timeout=15)
    sent_at = worker.signal(signal.SIGTERM)
    assert worker.wait(20) == 0, worker.output()
    assert 2.0 <= time.monotonic() - sent_at < 10.0
    assert all_state(qless, short, "complete")
    for jid in long:
        job = qless.get_job(jid)
        assert job is not None and job.state == "waiting", worker.output()
        assert job.remaining == 3
        assert "handed-back" in [entry.what for entry in job.history]
    assert job_state(qless, waiting) == "waiting"  # never popped after the signal


def test_max_jobs_counts_per_process_and_stops_after_draining(
    qless: Client, put: Put, spawn: Spawn, ledger: Ledger,
) -> None:
    jids = [put("worker.nap", 0.3) for _ in range(10)]
    worker = spawn("q", "--concurrency", "4", "--max-jobs", "6")
    assert worker.wait(30) == 0, worker.output()
    done = [jid for jid in jids if job_state(qless, jid) == "complete"]
    assert len(done) == 6
    assert len(events(ledger, "start")) == 6  # none started and left behind


def test_presence_lists_every_running_job(
    qless: Client, put: Put, spawn: Spawn, ledger: Ledger,
) -> None:
    jids = {put("worker.nap", 30), put("worker.anap", 30), put("worker.nap", 30)}
    worker = spawn("q", "--concurrency", "3")
    wait_for(lambda: len(events(ledger, "start")) == 3, timeout=15)

    def shown() -> set[str]:
        return {job.jid for entry in listed(qless) if entry.presence is not None
                for job in entry.presence.running}

    wait_for(lambda: shown() == jids, timeout=15)
    worker.signal(signal.SIGTERM)
    worker.signal(signal.SIGTERM)


def test_the_setting_gives_the_default(qless_settings: dict[str, Any], settings: Any,
                                       put: Put) -> None:
    from django_qless.worker.options import WorkerOptions  # noqa: PLC0415
    from django_qless.worker.pool import build_worker  # noqa: PLC0415

    settings.QLESS = {**qless_settings, "WORKER": {"CONCURRENCY": 5}}
    options = WorkerOptions.from_settings(queues=("q",))
    assert options.concurrency == 5
    worker = build_worker(options)
    assert isinstance(worker, PoolWorker) and worker.slots.size == 5
    assert type(build_worker(options.replace(concurrency=1))).__name__ == "Worker"


def opened_while(alias: str, run: Callable[[], Worker]) -> tuple[Worker, list[tuple[str, Any]]]:
    """Run a worker; every connection to `alias` opened meanwhile, with its thread's name."""
    opened: list[tuple[str, Any]] = []

    def note(sender: Any, connection: Any, **kwargs: Any) -> None:
        if connection.alias == alias:
            opened.append((threading.current_thread().name, connection))

    connection_created.connect(note, weak=False)
    try:
        worker = run()
    finally:
        connection_created.disconnect(note)
    return worker, opened


@pytest.mark.parametrize("max_age", [0, None])
def test_slot_threads_leave_no_database_connection_open(
    file_db: str,  # noqa: F811 - the fixture
    put: Put, run_worker: Callable[..., Worker], qless: Client, max_age: int | None,
) -> None:
    connections.settings[file_db]["CONN_MAX_AGE"] = max_age
    jids = [put("worker.touch_db", file_db) for _ in range(200)]
    worker, opened = opened_while(file_db, lambda: run_worker("q", concurrency=8))
    assert isinstance(worker, PoolWorker)
    assert all_state(qless, jids, "complete")
    in_slots = [(name, wrapper) for name, wrapper in opened if name.startswith("qless-slot-")]
    # Each slot thread has its own connections (persistent ones are reused between its
    # jobs); every one is closed once the worker stopped.
    assert len({name for name, _ in in_slots}) > 1
    assert len({id(wrapper) for _, wrapper in in_slots}) > 1
    if max_age is None:
        assert len(in_slots) < len(jids)  # reused, not one per job
    assert [name for name, wrapper in in_slots if wrapper.connection is not None] == []


@pytest.mark.parametrize("max_age", [0, None])
def test_an_async_jobs_database_calls_run_on_its_slot_thread_and_its_connections(
    file_db: str,  # noqa: F811 - the fixture
    put: Put, run_worker: Callable[..., Worker], qless: Client, max_age: int | None,
) -> None:
    connections.settings[file_db]["CONN_MAX_AGE"] = max_age
    jids = [put("worker.atouch_db", file_db) for _ in range(12)]
    _, opened = opened_while(file_db, lambda: run_worker("q", concurrency=4))
    assert all_state(qless, jids, "complete")
    in_jobs = [(name, wrapper) for name, wrapper in opened
               if name not in ("MainThread", "qless-outbox-sweeper")]
    # As under `async_to_sync`: the job's `sync_to_async` calls run on the thread that
    # waits for it (its slot's), not on one thread shared by every async job of the
    # process; so they use the slot's connections, checked around each job: closed after
    # it (CONN_MAX_AGE 0) or kept for the slot's next jobs (None).
    assert in_jobs and all(name.startswith("qless-slot-") for name, _ in in_jobs)
    assert len(in_jobs) == (len(jids) if max_age == 0 else len({name for name, _ in in_jobs}))
    assert [name for name, wrapper in in_jobs if wrapper.connection is not None] == []


def test_sigkill_loses_nothing_and_reruns_at_most_the_jobs_in_flight(
    qless: Client, put: Put, spawn: Spawn, ledger: Ledger,
) -> None:
    qless.config.put("q-heartbeat", 2)  # the killed worker's locks expire soon
    qless.config.put("grace-period", 0)
    jids = [put("worker.nap", 0.3) for _ in range(80)]
    worker = spawn("q", "--concurrency", "20")
    wait_for(lambda: len(events(ledger, "end")) >= 20, timeout=30)
    worker.signal(signal.SIGKILL)
    worker.wait(10)
    # Running, or finished with its completion not yet in Redis, at the kill: what Redis
    # still shows as running (the dead worker's locks last up to 2 s more).
    started = {entry["jid"] for entry in ledger() if entry["event"] == "start"}
    in_flight = {jid for jid in started if job_state(qless, jid) == "running"}
    assert 0 < len(in_flight) <= 20
    # Not --burst: the dead worker's jobs come back only once their locks expired.
    again = spawn("q", "--concurrency", "20")
    wait_for(lambda: all_state(qless, jids, "complete"), timeout=60)
    again.signal(signal.SIGTERM)
    assert again.wait(30) == 0, again.output()
    starts: dict[str, int] = {}
    for entry in ledger():
        if entry["event"] == "start":
            starts[entry["jid"]] = starts.get(entry["jid"], 0) + 1
    assert set(starts) == set(jids)  # nothing lost
    rerun = {jid for jid, count in starts.items() if count > 1}
    assert rerun <= in_flight  # only the jobs in flight at the kill ran again


@pytest.mark.parametrize("klass", ["worker.swallow_all", "worker.aswallow"])
def test_a_job_that_swallows_its_time_limit_is_logged_as_such(
    qless: Client, put: Put, spawn: Spawn, ledger: Ledger, klass: str,
) -> None:
    stubborn = put(klass, 1.5)  # time_limit 0.3, catches its interruption
    other = put("worker.nap", 0.5)
    worker = spawn("q", "--concurrency", "2")
    wait_for(lambda: stubborn in events(ledger, "end"), timeout=15)
    assert [e["event"] for e in ledger() if e["jid"] == stubborn][:2] == ["start", "swallowed"]
    wait_for(lambda: "swallowed its interruption" in worker.output(), timeout=10)
    assert (f"job {stubborn} swallowed its interruption (time limit exceeded) and returned"
            in worker.output())
    assert job_state(qless, other) == "complete"

    def published() -> list[int]:
        return [entry.presence.swallowed for entry in listed(qless)
                if entry.presence is not None]

    wait_for(lambda: published() == [1], timeout=15)  # for the worker page
    worker.signal(signal.SIGTERM)
    assert worker.wait(15) == 0, worker.output()


def test_processes_times_concurrency_run_at_once(
    qless: Client, put: Put, spawn: Spawn, ledger: Ledger,
) -> None:
    jids = [put("worker.nap", 3.0) for _ in range(8)]
    worker = spawn("q", "--processes", "2", "--concurrency", "4", "--burst")
    assert worker.wait(60) == 0, worker.output()
    assert all_state(qless, jids, "complete")
    starts, ends = events(ledger, "start"), events(ledger, "end")
    assert max(s["t"] for s in starts.values()) < min(e["t"] for e in ends.values())
    pids = [entry["pid"] for entry in starts.values()]
    assert len(set(pids)) == 2 and all(pids.count(pid) == 4 for pid in set(pids))


def test_completions_of_jobs_ending_together_share_round_trips(
    qless: Client, put: Put, run_worker: Callable[..., Worker],
) -> None:
    jids = [put("worker.noop") for _ in range(300)]
    worker = run_worker("q", concurrency=16)
    assert isinstance(worker, PoolWorker)
    assert all_state(qless, jids, "complete")
    assert worker.outcomes["completed"] == 300
    # One round trip per completion without sharing; jobs that end while one is under
    # way go together in the next.
    assert 0 < worker.completions.round_trips < 300


def test_failures_and_retries_of_jobs_ending_together_share_round_trips(
    qless: Client, put: Put, run_worker: Callable[..., Worker],
) -> None:
    failing = [put("worker.fail", "boom") for _ in range(150)]
    retried = [put("worker.wants_retry", 3600) for _ in range(150)]
    worker = run_worker("q", concurrency=16)
    assert isinstance(worker, PoolWorker)
    assert all_state(qless, failing, "failed")
    assert all_state(qless, retried, "scheduled")
    assert worker.outcomes["failed"] == 150
    jobs = qless.get_jobs(retried)
    assert {job.remaining for job in jobs} == {jobs[0].retries - 1}
    # Without sharing, each failure and retry would be a round trip of its own.
    assert 0 < worker.completions.round_trips < 300


def test_a_put_wakes_a_worker_whose_other_slots_are_busy(
    qless: Client, put: Put, spawn: Spawn, ledger: Ledger,
) -> None:
    long = put("worker.nap", 30)
    worker = spawn("q", "--concurrency", "4", "--poll-interval", "30")
    wait_for(lambda: long in events(ledger, "start"), timeout=15)
    time.sleep(1.0)  # the worker is asleep on the put events by now
    put_at = time.time()
    quick = put("worker.nap", 0.1)
    wait_for(lambda: quick in events(ledger, "end"), timeout=10)
    assert events(ledger, "start")[quick]["t"] - put_at < 2.0  # not the 30 s poll
    assert long not in events(ledger, "end")  # it ran beside the long job
    worker.signal(signal.SIGTERM)
    worker.signal(signal.SIGTERM)


def test_a_queue_max_concurrency_caps_the_slots_it_fills(
    qless: Client, put: Put, spawn: Spawn, ledger: Ledger,
) -> None:
    qless.queue("q").max_concurrency = 2
    jids = [put("worker.nap", 0.4) for _ in range(6)]
    worker = spawn("q", "--concurrency", "6", "--burst")
    assert worker.wait(60) == 0, worker.output()
    assert all_state(qless, jids, "complete")
    assert most_at_once(ledger)[0] == 2


def test_one_renewal_pass_renews_every_running_job_in_one_round_trip(
    qless: Client, put: Put, run_worker: Callable[..., Worker], monkeypatch: pytest.MonkeyPatch,
) -> None:
    qless.config.put("q-heartbeat", 3)  # a renewal every second
    trips: list[int] = []

    def counted(client: Client, commands: list[Any]) -> list[Any]:
        trips.append(len(commands))
        return run_all(client, commands)

    # The real round trip, counted: how many heartbeats each one carried.
    monkeypatch.setattr("django_qless.worker.renewals.run_all", counted)
    jids = [put("worker.nap", 3.5) for _ in range(10)]
    worker = run_worker("q", concurrency=10)
    assert all_state(qless, jids, "complete")
    assert worker.monitor.heartbeats == sum(trips) >= 20
    # About three passes of 10 (one per second), not 30 round trips of one.
    assert max(trips) == 10
    assert len(trips) <= 6


def test_a_redis_without_the_script_loaded_gets_it_again(
    qless: Client, put: Put, spawn: Spawn, redis_client: redis.Redis,
) -> None:
    jids = [put("worker.nap", 0.2) for _ in range(6)]
    # As after a Redis restart: the batched pops, heartbeats and completions fall back to
    # plain calls, which load it again.
    redis_client.script_flush()
    redis_client.function_flush()
    worker = spawn("q", "--concurrency", "3", "--burst")
    assert worker.wait(30) == 0, worker.output()
    assert all_state(qless, jids, "complete"), worker.output()


def test_a_thread_blocked_in_one_call_is_handed_back_and_ends_with_the_process(
    qless: Client, put: Put, spawn: Spawn, ledger: Ledger,
) -> None:
    blocked = put("worker.sleep", 60, retries=3)  # one time.sleep: no bytecode to stop at
    worker = spawn("q", "--concurrency", "2", "--shutdown-timeout", "1")
    wait_for(lambda: blocked in events(ledger, "start"), timeout=15)
    sent_at = worker.signal(signal.SIGTERM)
    assert worker.wait(15) == 0, worker.output()
    assert time.monotonic() - sent_at < 8.0  # the timeout, the grace, not the 60 s
    job = qless.get_job(blocked)
    assert job is not None and job.state == "waiting" and job.remaining == 3
    assert "handed-back" in [entry.what for entry in job.history]
    assert f"job {blocked} did not stop within" in worker.output()


def held_not_started(qless: Client, ledger: Ledger, jid: str) -> bool:
    """True while `jid` is locked to a worker (popped) but has not started."""
    return job_state(qless, jid) == "running" and not any(
        entry["jid"] == jid for entry in ledger())


def behind_the_held_job(put: Put) -> list[str]:
    """Jobs enough to wait behind one held: a pool holds none of a queue's last jobs, one
    per slot (`keep_waiting`), so they go to whichever slot frees up first."""
    return [put("worker.noop") for _ in range(2)]


def pool_in_thread(prefetch: int) -> tuple[PoolWorker, threading.Thread]:
    """A burst worker of 2 slots running in a thread of this process."""
    worker = PoolWorker(WorkerOptions(queues=("q",), burst=True, handle_signals=False,
                                      concurrency=2, prefetch=prefetch))
    return worker, in_thread(worker.run)


@pytest.mark.parametrize("prefetch", [1, 0])
def test_while_every_slot_is_busy_prefetch_jobs_are_popped_ahead_and_held(
    qless: Client, put: Put, ledger: Ledger, prefetch: int,
) -> None:
    warm = [put("worker.noop") for _ in range(2)]  # teach the worker its jobs are short
    busy = [put("worker.sleep", 0.8) for _ in range(2)]
    held = put("worker.mark", "held")
    behind = behind_the_held_job(put)
    _, thread = pool_in_thread(prefetch)
    wait_for(lambda: set(busy) <= set(events(ledger, "start")), what="both slots busy")
    if prefetch:
        wait_for(lambda: held_not_started(qless, ledger, held), what="the job held")
    time.sleep(0.3)  # both slots still busy
    assert held_not_started(qless, ledger, held) == bool(prefetch)
    assert job_state(qless, held) == ("running" if prefetch else "waiting")
    thread.join(10)
    assert not thread.is_alive()
    assert all_state(qless, [*warm, *busy, held, *behind], "complete")
    [run] = [entry for entry in ledger() if entry["jid"] == held]
    # Started as soon as a slot freed up, never given back.
    assert run["t"] >= min(entry["t"] for entry in events(ledger, "end").values())
    job = qless.get_job(held)
    assert job is not None and "handed-back" not in [entry.what for entry in job.history]


def test_a_queues_last_jobs_are_left_for_a_free_slot_not_held(
    qless: Client, put: Put, ledger: Ledger,
) -> None:
    [put("worker.noop") for _ in range(2)]
    busy = [put("worker.sleep", 0.8) for _ in range(2)]
    last = put("worker.mark", "last")
    _, thread = pool_in_thread(1)
    wait_for(lambda: set(busy) <= set(events(ledger, "start")), what="both slots busy")
    time.sleep(0.2)
    # Fewer jobs wait than the worker has slots: none is held while both slots are busy,
    # so a free slot of another worker takes it at once.
    assert job_state(qless, last) == "waiting"
    other = Client(qless.redis, worker_name="other")
    [job] = other.queue("q").pop()
    assert job.jid == last
    job.complete()
    thread.join(10)
    assert not thread.is_alive()
    assert all_state(qless, busy, "complete")
    assert last not in {entry["jid"] for entry in ledger()}


def test_a_job_held_while_every_slot_runs_a_long_job_goes_back_to_its_queue(
    qless: Client, put: Put, ledger: Ledger,
) -> None:
    [put("worker.noop") for _ in range(2)]
    busy = [put("worker.sleep", 2.0) for _ in range(2)]
    held = put("worker.mark", "held")
    behind_the_held_job(put)
    _, thread = pool_in_thread(1)
    wait_for(lambda: held_not_started(qless, ledger, held), what="the job held")
    wait_for(lambda: job_state(qless, held) == "waiting", timeout=1.5,
             what="the held job given back")
    assert not set(events(ledger, "end")) & set(busy)  # given back while both still ran
    thread.join(10)
    assert not thread.is_alive()
    job = qless.get_job(held)
    assert job is not None and job.state == "complete"
    assert [entry.what for entry in job.history][:4] == ["put", "popped", "handed-back", "put"]
    assert job.history[2].extra["reason"] == "held behind a long job"


def test_a_job_whose_lease_ran_out_before_its_slot_started_it_is_not_run(
    qless: Client, put: Put, run_worker: Callable[..., Worker], ledger: Ledger,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    qless.config.put("q-heartbeat", 2)
    qless.config.put("grace-period", 0)
    jid = put("worker.nap", 0.1)
    other = Client(qless.redis, worker_name="other")
    popped, read, watch = PoolWorker._pop, Renewals._read, FenceWatch.watch  # noqa: SLF001
    frozen = threading.Event()

    def stalled(worker: PoolWorker, free: int, ahead: int = 0) -> list[Any]:
        # The process stands still between the pop and the slot's start (SIGSTOP, a VM
        # pause): the lease runs out and another worker takes the job. Once it resumes,
        # the slot thread runs first: its monitor and fence threads get going a second
        # later, the `lock_lost` sent meanwhile still unread.
        jobs = popped(worker, free, ahead)
        if jobs:
            frozen.set()
            time.sleep(2.5)
            assert [job.jid for job in other.queue("q").pop()] == [jid]
            threading.Timer(1.0, frozen.clear).start()
        return jobs

    def still_reading(monitor: Renewals, timeout: float) -> dict[str, Any] | None:
        if frozen.is_set():
            time.sleep(min(timeout, 0.05))
            return None
        return read(monitor, timeout)

    def still_watching(fences: FenceWatch, *args: Any) -> None:
        if not frozen.is_set():
            watch(fences, *args)

    monkeypatch.setattr(PoolWorker, "_pop", stalled)
    monkeypatch.setattr(Renewals, "_read", still_reading)
    monkeypatch.setattr(FenceWatch, "watch", still_watching)
    worker = run_worker("q", concurrency=2)
    assert events(ledger, "start") == {}  # never started here: it is the other's now
    assert worker.outcomes["lock lost"] == 1
    job = qless.get_job(jid)
    assert job is not None and (job.state, job.worker) == ("running", "other")


@pytest.mark.parametrize("cleanup", [1.0, 2.5])
def test_a_job_taken_back_runs_again_only_once_its_first_run_stopped(
    qless: Client, put: Put, spawn: Spawn, ledger: Ledger, cleanup: float,
) -> None:
    qless.config.put("q-heartbeat", 3)  # renewed every second; fenced near the 3 s lease
    qless.config.put("grace-period", 0)
    jid = put("worker.nap_cleanup", 4.0, cleanup)
    worker = spawn("q", "--concurrency", "2", "--poll-interval", "0.1")
    wait_for(lambda: jid in events(ledger, "start"), timeout=15)
    # Handed to the next pop at once: this worker's, from its free slot, while the first
    # run still takes `cleanup` seconds to stop.
    qless.timeout(jid)
    wait_for(lambda: job_state(qless, jid) == "complete", timeout=30)
    runs = [entry for entry in ledger() if entry["jid"] == jid]
    assert [entry["event"] for entry in runs] == ["start", "stopped", "start", "end"]
    # Never two runs of the job at once; the second, longer than its lease, was renewed
    # throughout (not fenced) and completed.
    assert runs[2]["t"] >= runs[1]["t"]
    assert runs[1]["how"] == "LockLost"
    worker.signal(signal.SIGTERM)
    assert worker.wait(15) == 0, worker.output()
    # Past half its lease the second pop is not run: the lock expires, qless hands it out.
    assert ("has not stopped yet; not run" in worker.output()) == (cleanup > 1.5)



def test_a_late_lock_lost_about_a_lease_this_worker_lost_does_not_stop_its_new_run(
    qless: Client, put: Put,
) -> None:
    jid = put("worker.nap", 3.0)
    (job,) = qless.queue("q").pop()
    renewals = Renewals(qless, Interrupter(use_signals=False), StopState(), shutdown_timeout=10)
    renewals.slot(Interrupter(use_signals=False))
    lock_lost = {"type": "message", "data": json.dumps({"jid": jid, "event": "lock_lost"})}
    # A run whose lease ran out unrenewed (a fence): qless tells of it only once the job
    # is popped again, maybe by this very worker, as here (`timeout`: at once).
    first = renewals.begin(job, 60, None, None)
    first.lost = "fenced: its lease could not be renewed"
    renewals.end()
    qless.timeout(jid)
    (again,) = qless.queue("q").pop()
    second = renewals.begin(again, 60, None, None)
    renewals._on_message(lock_lost)  # noqa: SLF001 - the notice, read after the new start
    assert second.lost is None  # a renewal said the new lease is ours
    # A lock really lost is still stopped at once.
    qless.timeout(jid)
    Client(qless.redis, worker_name="other").queue("q").pop()
    renewals._on_message(lock_lost)  # noqa: SLF001
    assert second.lost == "lock_lost"
    renewals.end()


def test_jobs_come_with_completions_and_the_loop_pops_only_at_start_and_end(
    qless: Client, put: Put, ledger: Ledger, run_worker: Callable[..., Worker],
) -> None:
    jids = [put("worker.nap", 0.03) for _ in range(60)]
    worker = run_worker("q", concurrency=3, prefetch=0)
    assert isinstance(worker, PoolWorker)
    assert all_state(qless, jids, "complete")
    assert worker.outcomes["completed"] == 60
    # The loop popped for the three slots at the start, then only when a completion found
    # the queue empty: every other job came with the completion before it, one script
    # call per job.
    assert worker.pop_round_trips <= 6
    assert len({entry["thread"] for entry in events(ledger, "start").values()}) == 3


def test_slots_popping_with_their_completions_keep_the_round_robin_order(
    qless: Client, put: Put, ledger: Ledger, run_worker: Callable[..., Worker],
) -> None:
    jids = {queue: [put("worker.nap", 0.02, queue=queue) for _ in range(12)]
            for queue in ("a", "b")}
    run_worker("a", "b", concurrency=2, prefetch=0, strategy="round-robin")
    assert all_state(qless, jids["a"] + jids["b"], "complete")
    first_half = [entry["jid"] for entry in ledger() if entry["event"] == "start"][:12]
    # Each pop moves on to the next queue; popping "a" first every time would start
    # its 12 jobs before any of "b".
    assert 5 <= len(set(first_half) & set(jids["a"])) <= 7


def test_an_idle_pool_worker_gives_its_kept_connections_back_to_the_pool(
    qless: Client, put: Put, redis_client: redis.Redis, run_worker: Callable[..., Worker],
    workers: list[Worker],
) -> None:
    # A connection kept through an idle spell may be half-open after a network fault: the
    # next job's pop or completion would wait for the socket timeout, then fail.
    jids = [put("worker.noop") for _ in range(3)]
    kept: list[tuple[bool, bool]] = []

    def look_while_idle() -> None:
        try:
            wait_for(lambda: all_state(qless, jids, "complete"), what="the first jobs")
            wait_for(lambda: dict(redis_client.pubsub_numsub("ql:log")).get("ql:log", 0) >= 1,
                     what="the worker listening, idle")
            worker = workers[-1]
            if isinstance(worker, PoolWorker):
                kept.append((worker._pops.holding, worker.completions.holding))
        finally:
            put("worker.noop")  # the fourth job: --max-jobs 4 ends the worker

    in_thread(look_while_idle)
    run_worker("q", concurrency=4, burst=False, max_jobs=4, poll_interval=5)
    assert kept == [(False, False)]


def test_a_slot_taking_a_held_job_during_a_round_cannot_push_past_max_jobs(
    qless: Client, put: Put, monkeypatch: Any,
) -> None:
    jids = [put("worker.noop") for _ in range(3)]
    worker = PoolWorker(WorkerOptions(queues=("q",), concurrency=2, max_jobs=2,
                                      handle_signals=False))
    [first] = worker.client.queue("q").pop()
    worker.held.append(Held(first, time.monotonic(), 60.0))
    worker.started = 1  # one job runs in the other slot
    monkeypatch.setattr(type(worker.slots), "free", property(lambda slots: 1))
    started: list[str] = []
    monkeypatch.setattr(worker, "_start", lambda held: started.append(held.job.jid))
    taken: list[Held | None] = []
    waited = worker.completions.wait_for

    def a_slot_ends_its_job_meanwhile(condition: Callable[[], bool]) -> None:
        # Between the round's count of free slots and its starts, a slot whose job ended
        # takes its next job itself.
        taken.append(worker._next_for_slot())
        waited(condition)

    monkeypatch.setattr(worker.completions, "wait_for", a_slot_ends_its_job_meanwhile)
    worker.run_once()
    # The held job went to one of them; nothing more was popped: 2 jobs in all, not 3.
    assert len(started) + sum(held is not None for held in taken) == 1
    assert worker.started == 2
    assert [job_state(qless, jid) for jid in jids[1:]] == ["waiting", "waiting"]
    worker.completions.close()
    worker._pops.release()
