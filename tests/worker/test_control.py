"""The admin's orders to one worker process (`core.control`): pause, resume, stop.

Real worker processes on the suite's Redis: serial, `--concurrency` and `--processes`.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from typing import Any

from django_qless.core import Client, control, keys
from django_qless.core.presence import Presence, listed
from tests.support import wait_for

from .conftest import WorkerProcess, job_state

Ledger = Callable[[], list[dict[str, Any]]]
Spawn = Callable[..., WorkerProcess]


def presences(qless: Client) -> list[Presence]:
    """Every worker process reporting now."""
    return [entry.presence for entry in listed(qless) if entry.presence is not None]


def listens(qless: Client, name: str) -> bool:
    """Whether a process subscribes to the worker's control channel."""
    channel = keys.worker_control(name)
    return dict(qless.redis.pubsub_numsub(channel)).get(channel.encode(), 0) > 0


def name_of(qless: Client, pid: int) -> str:
    """The worker name the process `pid` reports under, once it reports and listens for
    orders (it publishes its presence before its monitor subscribes)."""
    found = wait_for(lambda: [p.name for p in presences(qless)
                              if p.pid == pid and listens(qless, p.name)], timeout=20,
                     what=f"process {pid} to report and listen")
    return str(found[0])


def paused_by(qless: Client, name: str) -> str | None:
    """What the worker's presence says about its pause (None: not reporting)."""
    return next((p.paused_by for p in presences(qless) if p.name == name), None)


def events(ledger: Ledger, jid: str) -> list[str]:
    """What the job recorded, in order."""
    return [entry["event"] for entry in ledger() if entry["jid"] == jid]


def test_pause_lets_the_running_job_finish_and_resume_pops_again(
    qless: Client, put: Callable[..., str], spawn: Spawn, ledger: Ledger,
) -> None:
    running = put("worker.sleep", 1.5)
    worker = spawn("q")
    name = name_of(qless, worker.proc.pid)
    wait_for(lambda: events(ledger, running) == ["start"], timeout=15)
    assert control.send(qless, name, control.PAUSE, "alice") == 1
    waiting = put("worker.mark")
    wait_for(lambda: job_state(qless, running) == "complete", timeout=10)
    wait_for(lambda: paused_by(qless, name) == "alice", timeout=5)
    time.sleep(1.5)  # well past a pop round and a wake-up on the put
    assert job_state(qless, waiting) == "waiting" and events(ledger, waiting) == []
    assert control.send(qless, name, control.RESUME, "bob") == 1
    wait_for(lambda: job_state(qless, waiting) == "complete", timeout=10)
    wait_for(lambda: paused_by(qless, name) == "", timeout=5)
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0, worker.output()
    assert "paused by alice" in worker.output() and "resumed by bob" in worker.output()


def test_stop_finishes_the_running_job_and_exits_0_with_nothing_lost(
    qless: Client, put: Callable[..., str], spawn: Spawn, ledger: Ledger,
) -> None:
    running = put("worker.sleep", 1.5)
    worker = spawn("q", "--shutdown-timeout", "30")
    name = name_of(qless, worker.proc.pid)
    wait_for(lambda: events(ledger, running) == ["start"], timeout=15)
    later = [put("worker.mark") for _ in range(3)]
    assert control.send(qless, name, control.STOP, "alice") == 1
    assert worker.wait() == 0, worker.output()
    assert events(ledger, running) == ["start", "end"]
    assert job_state(qless, running) == "complete"
    # Not run, and back in (or never out of) the queue: no lease left to expire.
    assert [job_state(qless, jid) for jid in later] == ["waiting"] * 3
    assert not qless.workers.jobs(name).jobs
    assert "stop requested by alice" in worker.output()
    assert presences(qless) == []


def test_a_pause_reaches_only_the_named_worker(
    qless: Client, put: Callable[..., str], spawn: Spawn, ledger: Ledger,
) -> None:
    paused, other = spawn("q"), spawn("q")
    paused_name, other_name = name_of(qless, paused.proc.pid), name_of(qless, other.proc.pid)
    assert control.send(qless, paused_name, control.PAUSE, "alice") == 1
    wait_for(lambda: paused_by(qless, paused_name) == "alice", timeout=5)
    jids = [put("worker.mark") for _ in range(6)]
    wait_for(lambda: all(job_state(qless, jid) == "complete" for jid in jids), timeout=15)
    assert {entry["worker"] for entry in ledger()} == {other_name}
    assert paused_by(qless, other_name) == ""
    for worker in (paused, other):
        worker.signal(signal.SIGTERM)
        assert worker.wait() == 0, worker.output()


def test_a_concurrent_worker_pauses_with_its_jobs_running_and_resumes(
    qless: Client, put: Callable[..., str], spawn: Spawn, ledger: Ledger,
) -> None:
    running = [put("worker.sleep", 1.5) for _ in range(2)]
    worker = spawn("q", "--concurrency", "3")
    name = name_of(qless, worker.proc.pid)
    wait_for(lambda: all(events(ledger, jid) == ["start"] for jid in running), timeout=15)
    assert control.send(qless, name, control.PAUSE, "alice") == 1
    waiting = put("worker.mark")  # a slot is free: only the pause keeps it waiting
    wait_for(lambda: all(job_state(qless, jid) == "complete" for jid in running), timeout=10)
    time.sleep(1.0)
    assert job_state(qless, waiting) == "waiting"
    assert control.send(qless, name, control.RESUME, "bob") == 1
    wait_for(lambda: job_state(qless, waiting) == "complete", timeout=10)
    assert control.send(qless, name, control.STOP, "bob") == 1
    assert worker.wait() == 0, worker.output()


def test_each_process_of_a_supervisor_hears_its_own_orders(
    qless: Client, put: Callable[..., str], spawn: Spawn, ledger: Ledger,
) -> None:
    supervisor = spawn("q", "--processes", "2")
    names = wait_for(lambda: sorted(p.name for p in presences(qless)) if len(
        presences(qless)) == 2 else None, timeout=20, what="both processes to report")
    paused_name, other_name = names
    assert control.send(qless, paused_name, control.PAUSE, "alice") == 1
    wait_for(lambda: paused_by(qless, paused_name) == "alice", timeout=5)
    jids = [put("worker.mark") for _ in range(6)]
    wait_for(lambda: all(job_state(qless, jid) == "complete" for jid in jids), timeout=15)
    assert {entry["worker"] for entry in ledger()} == {other_name}
    # A stopped process ends like one at --max-jobs: the supervisor starts another.
    assert control.send(qless, other_name, control.STOP, "alice") == 1
    wait_for(lambda: {p.name for p in presences(qless)} - {paused_name, other_name},
             timeout=20, what="a process in place of the stopped one")
    assert other_name not in {p.name for p in presences(qless)}
    assert supervisor.proc.poll() is None
    supervisor.signal(signal.SIGTERM)
    assert supervisor.wait() == 0, supervisor.output()


def test_an_order_nobody_listens_for_reaches_no_one(qless: Client) -> None:
    # A worker of another qless client listens on the qless worker channel, not ours.
    listener = qless.redis.pubsub()  # type: ignore[no-untyped-call]
    listener.subscribe("ql:w:elsewhere-1")
    wait_for(lambda: listener.get_message(timeout=0.1), what="the subscription")
    try:
        assert control.send(qless, "elsewhere-1", control.STOP, "alice") == 0
        assert listener.get_message(timeout=0.3) is None
    finally:
        listener.close()
