"""A real worker process and its signals: graceful stop, hand-back, forced exit, SIGKILL."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis
from django.core.management import call_command

from django_qless.core import Client
from django_qless.worker.report import HANDED_BACK
from tests.support import wait_for

from .conftest import WorkerProcess, job_state

Ledger = Callable[[], list[dict[str, Any]]]
Spawn = Callable[..., WorkerProcess]


def started(ledger: Ledger, jid: str) -> bool:
    """True once the job recorded its start."""
    return any(entry["jid"] == jid and entry["event"] == "start" for entry in ledger())


def test_sigterm_during_a_short_job_finishes_it_and_pops_nothing_more(
    qless: Client, put: Callable[..., str], spawn: Spawn, ledger: Ledger,
    redis_client: redis.Redis,
) -> None:
    first = put("worker.sleep", 1.0)
    second = put("worker.noop")
    worker = spawn("q")
    wait_for(lambda: started(ledger, first), timeout=10)
    sent_at = worker.signal(signal.SIGTERM)
    assert worker.wait() == 0, worker.output()
    assert time.monotonic() - sent_at < 5.0
    assert job_state(qless, first) == "complete"
    job = qless.get_job(second)
    assert job is not None and job.state == "waiting"
    assert [h.what for h in job.history] == ["put"]  # never popped
    name = ledger()[0]["worker"]
    assert redis_client.zscore("ql:workers", name) is None  # deregistered
    assert "stopping (signal SIGTERM)" in worker.output()


def test_sigterm_during_a_long_job_hands_it_back_after_the_timeout(
    qless: Client, put: Callable[..., str], spawn: Spawn, ledger: Ledger,
) -> None:
    jid = put("worker.sleep_first", 30, retries=3, priority=7, tags=["keep"])
    worker = spawn("q", "--shutdown-timeout", "1")
    wait_for(lambda: started(ledger, jid), timeout=10)
    sent_at = worker.signal(signal.SIGTERM)
    assert worker.wait() == 0, worker.output()
    assert 1.0 <= time.monotonic() - sent_at < 8.0
    job = qless.get_job(jid)
    assert job is not None and job.state == "waiting"
    assert (job.remaining, job.retries, job.priority, job.tags) == (3, 3, 7, ("keep",))
    name = ledger()[0]["worker"]
    history = [(h.what, h.extra) for h in job.history]
    assert [what for what, _ in history] == ["put", "popped", HANDED_BACK, "put"]
    assert history[2][1]["worker"] == name and history[2][1]["reason"] == "worker shutdown"
    # Another worker picks it up and completes it: two executions in all.
    call_command("qless_worker", "q", burst=True, verbosity=0)
    assert job_state(qless, jid) == "complete"
    assert [entry["event"] for entry in ledger()] == ["start", "start", "end"]


def test_second_signal_exits_at_once_and_leaves_the_job_to_expire(
    qless: Client, put: Callable[..., str], spawn: Spawn, ledger: Ledger,
) -> None:
    jid = put("worker.sleep", 30)
    worker = spawn("q", "--shutdown-timeout", "60")
    wait_for(lambda: started(ledger, jid), timeout=30)
    worker.signal(signal.SIGTERM)
    # The first signal was handled: the worker says it waits for the job.
    wait_for(lambda: "waiting up to 60" in worker.output(), timeout=30)
    sent_at = worker.signal(signal.SIGINT)
    assert worker.wait() == 1, worker.output()
    assert time.monotonic() - sent_at < 5.0
    assert "second signal (SIGINT), exiting now" in worker.output()
    assert job_state(qless, jid) == "running"


def test_sigint_while_idle_exits_within_a_second(spawn: Spawn, redis_client: redis.Redis
                                                 ) -> None:
    worker = spawn("q")
    wait_for(lambda: dict(redis_client.pubsub_numsub("ql:log")).get("ql:log", 0) >= 1,
             timeout=10)
    worker.signal(signal.SIGINT)
    # The idle loop notices within a fraction of a second (leaving the interpreter may take
    # longer on a loaded machine).
    wait_for(lambda: "stopping (signal SIGINT)" in worker.output(), timeout=1.0)
    assert worker.wait() == 0, worker.output()


@pytest.mark.slow
def test_sigkill_job_is_run_again_by_another_worker_after_its_lease(
    qless: Client, put: Callable[..., str], spawn: Spawn, ledger: Ledger,
) -> None:
    qless.config.put("q-heartbeat", 2)
    qless.config.put("grace-period", 1)
    jid = put("worker.sleep_first", 30, retries=3)
    worker = spawn("q")
    wait_for(lambda: started(ledger, jid), timeout=10)
    killed_at = time.monotonic()
    worker.signal(signal.SIGKILL)
    assert worker.wait() == -signal.SIGKILL
    call_command("qless_worker", "q", max_jobs=1, poll_interval=0.2, verbosity=0)
    # Lease (2 s) + grace (1 s) + a poll.
    assert 2.5 < time.monotonic() - killed_at < 8.0
    job = qless.get_job(jid)
    assert job is not None and job.state == "complete"
    assert job.remaining == 3  # complete resets it; the stall was counted on the way
    events = [entry["event"] for entry in ledger()]
    assert events == ["start", "start", "end"]
    workers = [entry["worker"] for entry in ledger()]
    assert workers[0] != workers[1]
    assert "timed-out" in [h.what for h in job.history]


def test_processes_run_jobs_in_parallel_and_stop_together(
    qless: Client, put: Callable[..., str], spawn: Spawn, ledger: Ledger,
) -> None:
    jids = [put("worker.sleep", 0.25) for _ in range(4)]
    worker = spawn("q", "--processes", "2")
    wait_for(lambda: all(job_state(qless, jid) == "complete" for jid in jids), timeout=10)
    starts = [entry for entry in ledger() if entry["event"] == "start"]
    assert len({entry["pid"] for entry in starts}) == 2
    assert len({entry["worker"] for entry in starts}) == 2
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0, worker.output()
    assert worker.output().count("stopping (signal SIGUSR2)") == 2


def test_processes_in_burst_mode_exit_when_the_queues_are_empty(
    qless: Client, put: Callable[..., str], spawn: Spawn,
) -> None:
    jids = [put("worker.noop") for _ in range(20)]
    worker = spawn("q", "--processes", "2", "--burst")
    assert worker.wait() == 0, worker.output()
    assert all(job_state(qless, jid) == "complete" for jid in jids)


def test_children_stop_when_the_supervisor_dies(
    spawn: Spawn, redis_client: redis.Redis,
) -> None:
    worker = spawn("q", "--processes", "2")
    names = wait_for(lambda: (found := redis_client.zrange("ql:workers", 0, -1))
                     and len(found) == 2 and found, timeout=10)
    pids = [int(name.rsplit("-", 2)[1]) for name in names]
    worker.signal(signal.SIGKILL)
    worker.wait()
    wait_for(lambda: not any(alive(pid) for pid in pids), timeout=3)


def alive(pid: int) -> bool:
    """True while a process exists and is not a zombie (Linux /proc)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.slow
def test_frozen_worker_discards_its_job_on_resume_and_keeps_working(
    qless: Client, put: Callable[..., str], spawn: Spawn, ledger: Ledger,
) -> None:
    qless.config.put("q-heartbeat", 2)
    qless.config.put("grace-period", 1)
    jid = put("worker.sleep_first", 30)
    worker = spawn("q")
    wait_for(lambda: started(ledger, jid), timeout=10)
    frozen_pid = ledger()[0]["pid"]
    worker.signal(signal.SIGSTOP)
    # Another worker takes the job once lease and grace have run out, and completes it.
    call_command("qless_worker", "q", max_jobs=1, poll_interval=0.2, verbosity=0)
    assert job_state(qless, jid) == "complete"
    worker.signal(signal.SIGCONT)
    # A process resumed on a loaded machine (the CI's legs side by side) may wait a while
    # for a core; its fence fires at once when it does.
    try:
        wait_for(lambda: "result discarded" in worker.output(), timeout=20)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the resumed worker's log:\n{worker.output()}") from None
    after = put("worker.mark", "after")
    wait_for(lambda: job_state(qless, after) == "complete", timeout=5)
    assert [entry["pid"] for entry in ledger() if entry["jid"] == after] == [frozen_pid]
    assert [(entry["pid"] == frozen_pid, entry["event"]) for entry in ledger()
            if entry["jid"] == jid] == [(True, "start"), (False, "start"), (False, "end")]
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0, worker.output()
    assert "Traceback" not in worker.output()


def test_supervisor_replaces_children_that_reach_their_job_limit(
    qless: Client, put: Callable[..., str], spawn: Spawn, ledger: Ledger,
) -> None:
    jids = [put("worker.mark", str(n)) for n in range(5)]
    worker = spawn("q", "--processes", "2", "--max-jobs", "1")
    wait_for(lambda: all(job_state(qless, jid) == "complete" for jid in jids), timeout=10)
    assert len({entry["pid"] for entry in ledger()}) == 5  # one process per job
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0, worker.output()


def test_second_signal_to_the_supervisor_exits_at_once(
    qless: Client, put: Callable[..., str], spawn: Spawn, ledger: Ledger,
) -> None:
    jids = [put("worker.sleep", 30) for _ in range(2)]
    worker = spawn("q", "--processes", "2", "--shutdown-timeout", "60")
    wait_for(lambda: all(started(ledger, jid) for jid in jids), timeout=30)
    pids = [entry["pid"] for entry in ledger()]
    worker.signal(signal.SIGTERM)
    # The first signal reached both children: each says it waits for its job.
    wait_for(lambda: worker.output().count("waiting up to 60") == 2, timeout=30)
    sent_at = worker.signal(signal.SIGTERM)
    assert worker.wait() == 1, worker.output()
    assert time.monotonic() - sent_at < 5.0
    wait_for(lambda: not any(alive(pid) for pid in pids), timeout=10)
    assert all(job_state(qless, jid) == "running" for jid in jids)


def test_a_failing_health_check_stops_the_supervisor_before_it_forks(
    spawn: Spawn, redis_client: redis.Redis
) -> None:
    redis_client.hset("ql:config", "q-heartbeat", "abc")
    worker = spawn("q", "--processes", "2")
    assert worker.wait(timeout=10) == 1
    assert "q-heartbeat" in worker.output()
    assert "started worker process" not in worker.output()
