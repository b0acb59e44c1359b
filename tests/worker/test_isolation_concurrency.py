"""`--isolation process --concurrency N`: N jobs at once, each in a child of its own.

Real worker subprocesses on the suite's redis-server (as in `test_concurrency`): a child's
kill or death fails its job alone, the others run on. Then the child's reset after a fork
taken while other threads of the worker held locks (`worker.forked`), in real forks.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from django_qless.connection import reset_clients
from django_qless.core import Client
from django_qless.worker import forked
from django_qless.worker.fence import margin_for
from django_qless.worker.interrupt import Interrupter, LockLost
from django_qless.worker.options import WorkerOptions
from django_qless.worker.pool import PoolWorker, build_worker
from tests.faults.proxy import FaultProxy
from tests.support import wait_for

from .conftest import WorkerProcess, job_state
from .test_concurrency import all_state, events
from .test_fence import LATE, LEASE, direct, lock_expiry, proxy  # noqa: F401 - fixtures

Ledger = Callable[[], list[dict[str, Any]]]
Spawn = Callable[..., WorkerProcess]
Put = Callable[..., str]

ISOLATED = ("--isolation", "process")


def alive(pid: int) -> bool:
    """True while a process of that pid exists (a zombie included)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def child_pids(ledger: Ledger) -> dict[str, int]:
    """The pid of the process each job started in, by jid."""
    return {jid: int(entry["pid"]) for jid, entry in events(ledger, "start").items()}


def test_the_options_build_a_pool_whose_jobs_are_isolated(qless: Client) -> None:
    options = WorkerOptions(queues=("q",), concurrency=4, isolation="process")
    worker = build_worker(options)
    assert isinstance(worker, PoolWorker) and worker.slots.size == 4


def test_isolated_jobs_run_at_once_each_in_a_child_of_its_own(
    qless: Client, put: Put, spawn: Spawn, ledger: Ledger,
) -> None:
    jids = [put("worker.nap", 1.0) for _ in range(4)]
    coroutine = put("worker.anap", 1.0)
    worker = spawn("q", "--concurrency", "5", *ISOLATED, "--burst")
    assert worker.wait(30) == 0, worker.output()
    assert all_state(qless, [*jids, coroutine], "complete"), worker.output()
    starts, ends = events(ledger, "start"), events(ledger, "end")
    # Serially they would take 5 s; at once, all start before the first one ends.
    assert max(s["t"] for s in starts.values()) < min(e["t"] for e in ends.values())
    assert max(e["t"] for e in ends.values()) - min(s["t"] for s in starts.values()) < 2.5
    pids = child_pids(ledger)
    assert pids[coroutine] == worker.proc.pid  # an `async def` job stays in the worker
    children = {pids[jid] for jid in jids}
    assert len(children) == 4 and worker.proc.pid not in children
    assert not any(alive(pid) for pid in children)


def test_a_jobs_end_is_not_held_by_a_child_forked_beside_it(
    qless: Client, put: Put, spawn: Spawn, ledger: Ledger,
) -> None:
    # Forked at the same moment as long jobs: a long job's child that inherited a short
    # job's pipe would hide the short job's end until its own.
    jids = [put("worker.nap", 6.0 if n % 4 == 3 else 0.2) for n in range(16)]
    short = [jid for n, jid in enumerate(jids) if n % 4 != 3]
    worker = spawn("q", "--concurrency", "16", *ISOLATED, "--shutdown-timeout", "0.5")
    wait_for(lambda: len(events(ledger, "start")) == 16, timeout=20)
    wait_for(lambda: all_state(qless, short, "complete"), timeout=20)
    seen = time.time()
    starts = events(ledger, "start")
    assert seen - max(starts[jid]["t"] for jid in short) < 3.5, worker.output()
    worker.signal(signal.SIGTERM)
    assert worker.wait(20) == 0, worker.output()


def test_a_hard_time_limit_kills_one_child_and_the_others_complete(
    qless: Client, put: Put, spawn: Spawn, ledger: Ledger,
) -> None:
    limited = put("worker.swallow_all", 30)  # soft limit 0.3 s, swallowed: hard limit 1.3 s
    others = [put("worker.nap", 2.5) for _ in range(3)]
    worker = spawn("q", "--concurrency", "4", *ISOLATED, "--burst")
    assert worker.wait(30) == 0, worker.output()
    job = qless.get_job(limited)
    assert job is not None and job.failure is not None
    assert job.failure.group == "q-TimeLimitExceeded"
    assert "hard time limit of 1.3s exceeded" in job.failure.message
    assert "swallow_all" in job.failure.message  # the stack it was killed in
    assert all_state(qless, others, "complete"), worker.output()
    assert limited not in events(ledger, "end")
    pids = child_pids(ledger)
    assert len(set(pids.values())) == 4 and not any(alive(pid) for pid in pids.values())


def test_a_job_past_its_memory_cap_is_killed_alone(
    qless: Client, put: Put, spawn: Spawn, ledger: Ledger,
) -> None:
    hog = put("worker.hog", 2048)
    others = [put("worker.nap", 2.0) for _ in range(3)]
    worker = spawn("q", "--concurrency", "4", *ISOLATED, "--job-memory", "300", "--burst")
    assert worker.wait(30) == 0, worker.output()
    job = qless.get_job(hog)
    assert job is not None and job.failure is not None
    assert job.failure.group == "q-MemoryLimitExceeded"
    assert "above JOB_MEMORY_MB 300" in job.failure.message
    assert hog not in events(ledger, "end")
    assert all_state(qless, others, "complete"), worker.output()


def test_children_that_die_fail_their_jobs_alone_and_at_once(
    qless: Client, put: Put, spawn: Spawn, ledger: Ledger,
) -> None:
    exits, killed = put("worker.crash", "exit"), put("worker.crash", "sigkill")
    others = [put("worker.nap", 4.0) for _ in range(2)]
    worker = spawn("q", "--concurrency", "4", *ISOLATED)
    wait_for(lambda: all_state(qless, [exits, killed], "failed"), timeout=20)
    # Failed while the others still run: nothing waited for their children.
    assert all_state(qless, others, "running"), worker.output()
    for jid, says in ((exits, "exited with status 3"), (killed, "killed by signal SIGKILL")):
        job = qless.get_job(jid)
        assert job is not None and job.failure is not None
        assert job.failure.group == "q-ChildProcessDied"
        assert says in job.failure.message
    wait_for(lambda: all_state(qless, others, "complete"), timeout=20)
    worker.signal(signal.SIGTERM)
    assert worker.wait(20) == 0, worker.output()


def test_a_cancelled_jobs_child_is_killed_alone(
    qless: Client, put: Put, spawn: Spawn, ledger: Ledger,
) -> None:
    victim = put("worker.nap", 30)
    others = [put("worker.nap", 3.0) for _ in range(3)]
    worker = spawn("q", "--concurrency", "4", *ISOLATED)
    wait_for(lambda: len(events(ledger, "start")) == 4, timeout=20)
    pids = child_pids(ledger)
    qless.cancel(victim)  # qless publishes `canceled` to the worker: the lock is lost
    wait_for(lambda: not alive(pids[victim]), timeout=5, what="the victim's child killed")
    assert all(alive(pids[jid]) for jid in others)
    wait_for(lambda: all_state(qless, others, "complete"), timeout=20)
    assert qless.get_job(victim) is None  # canceled, and nothing written back for it
    assert victim not in events(ledger, "end")
    assert f"job {victim} stopped, its result discarded" in worker.output()
    worker.signal(signal.SIGTERM)
    assert worker.wait(20) == 0, worker.output()


def test_sigterm_lets_isolated_jobs_finish_then_kills_and_hands_back_the_rest(
    qless: Client, put: Put, spawn: Spawn, ledger: Ledger,
) -> None:
    short = [put("worker.nap", 1.0) for _ in range(2)]
    long = [put("worker.nap", 60, retries=3) for _ in range(2)]
    waiting = put("worker.noop")
    worker = spawn("q", "--concurrency", "4", *ISOLATED, "--shutdown-timeout", "2")
    wait_for(lambda: len(events(ledger, "start")) == 4, timeout=20)
    pids = child_pids(ledger)
    for pid in pids.values():
        # As systemd's KillMode=control-group does: the jobs' processes ignore it.
        os.kill(pid, signal.SIGTERM)
    sent_at = worker.signal(signal.SIGTERM)
    assert worker.wait(20) == 0, worker.output()
    assert 2.0 <= time.monotonic() - sent_at < 10.0
    assert all_state(qless, short, "complete"), worker.output()
    for jid in long:
        job = qless.get_job(jid)
        assert job is not None and job.state == "waiting", worker.output()
        assert job.remaining == 3
        assert "handed-back" in [entry.what for entry in job.history]
    assert job_state(qless, waiting) == "waiting"
    assert not any(alive(pid) for pid in pids.values())


@pytest.mark.parametrize("concurrency", ["1", "2"])
def test_what_an_isolated_job_prints_and_logs_reaches_the_workers_output(
    qless: Client, put: Put, spawn: Spawn, concurrency: str,
) -> None:
    jid = put("worker.say", "said by the child")
    # Standard output block-buffered, as in production (this suite may run unbuffered).
    worker = spawn("q", "--concurrency", concurrency, *ISOLATED, "--burst",
                   env={"PYTHONUNBUFFERED": ""})
    assert worker.wait(30) == 0, worker.output()
    assert job_state(qless, jid) == "complete"
    output = worker.output()
    assert "said by the child\n" in output  # printed: block-buffered, flushed before exit
    assert "said by the child (logged)" in output


def test_a_polled_interruption_is_pending_not_raised() -> None:
    interrupter = Interrupter(use_signals=False)
    armed, seen = threading.Event(), threading.Event()
    outcome: list[object] = []

    def job_thread() -> None:
        try:
            interrupter.arm(None, polled=True)
            armed.set()
            deadline = time.monotonic() + 5
            while interrupter.pending is None and time.monotonic() < deadline:
                time.sleep(0.01)
            outcome.append(interrupter.pending)
            seen.set()
            interrupter.disarm()
        except BaseException as exc:  # noqa: BLE001 - raised into the thread: the failure
            outcome.append(exc)

    thread = threading.Thread(target=job_thread)
    thread.start()
    armed.wait(5)
    assert interrupter.interrupt(LockLost)
    thread.join(10)
    assert outcome == [LockLost]


# The child's reset: a fork taken while another thread holds a lock.


def forked_child(body: Callable[[], None], timeout: float = 10.0) -> int | None:
    """Run `body` in a forked child; its exit status, or None if it hung (then killed)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            body()
            code = 0
        finally:
            os._exit(code)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


@contextlib.contextmanager
def blocked_stream() -> Iterator[tuple[int, io.TextIOWrapper]]:
    """A text stream on a pipe nobody reads, and a thread blocked in a write to it: it holds
    the stream's buffer lock. Yields the write descriptor and the stream."""
    read_fd, write_fd = os.pipe()
    stream = open(write_fd, "w", closefd=False)  # noqa: PTH123, SIM115 - closed below
    writing = threading.Thread(target=lambda: (stream.write("x" * (1 << 20)), stream.flush()),
                               daemon=True)
    writing.start()
    time.sleep(0.2)  # the pipe is full: the thread waits inside the write, lock held
    try:
        yield write_fd, stream
    finally:
        while writing.is_alive():
            os.read(read_fd, 1 << 16)
            writing.join(0.01)
        stream.close()
        os.close(read_fd)
        os.close(write_fd)


def test_a_child_writes_to_streams_another_thread_held_at_the_fork(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    logger = logging.getLogger("tests.forked")
    with blocked_stream() as (stderr_fd, stderr), blocked_stream() as (log_fd, log):
        monkeypatch.setattr(sys, "stderr", stderr)
        handler = logging.StreamHandler(log)
        logger.addHandler(handler)

        def body() -> None:
            null = os.open(os.devnull, os.O_WRONLY)
            for fd in (stderr_fd, log_fd):
                os.dup2(null, fd)  # a full pipe cannot block the child: only a lock can
            forked.reset([])
            print("from the child", file=sys.stderr)  # noqa: T201 - the write under test
            logger.warning("from the child")
            forked.flush_streams()

        try:
            status = forked_child(body)
        finally:
            logger.removeHandler(handler)
            monkeypatch.undo()
    assert status == 0


def test_a_child_uses_a_redis_pool_whose_lock_another_thread_held_at_the_fork(
    redis_client: redis.Redis,
) -> None:
    client = redis.Redis(connection_pool=redis.ConnectionPool(
        **redis_client.connection_pool.connection_kwargs))
    client.ping()
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with client.connection_pool._lock:  # noqa: SLF001 - what a thread of the worker holds
            held.set()
            release.wait(30)

    def body() -> None:
        forked.reset([client])
        client.ping()

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    held.wait(5)
    try:
        status = forked_child(body)
    finally:
        release.set()
        holder.join(5)
        client.close()
    assert status == 0


def test_every_isolated_job_whose_lease_cannot_be_renewed_has_its_child_killed_in_time(
    proxy: FaultProxy, direct: Client,  # noqa: F811 - the fixtures
    settings: Any, ledger: Ledger,
) -> None:
    direct.config.put("q-heartbeat", LEASE)
    jids = [direct.queue("q").put("worker.nap", {"args": [30], "kwargs": {}})
            for _ in range(3)]
    settings.QLESS = {"URL": proxy.url, "OPTIONS": {"socket_timeout": 1},
                      "WORKER": {"POLL_INTERVAL": 0.2}}
    reset_clients()
    worker = build_worker(WorkerOptions.from_settings(
        queues=("q",), handle_signals=False, concurrency=3, isolation="process"))
    thread = threading.Thread(target=worker.run, name="fenced-worker", daemon=True)
    thread.start()
    gone: dict[str, float] = {}
    try:
        wait_for(lambda: len(events(ledger, "start")) == 3, 10, what="every job started")
        wait_for(lambda: worker.monitor.heartbeats >= 3, 10, every=0.01,
                 what="a renewal of each job")
        pids = child_pids(ledger)
        proxy.blackhole()
        cut = time.time()
        expiry = min(lock_expiry(direct, jid) for jid in jids)

        def killed() -> bool:
            for jid, pid in pids.items():
                if jid not in gone and not alive(pid):
                    gone[jid] = time.time()
            return len(gone) == 3

        wait_for(killed, 10, every=0.01, what="every child killed")
    finally:
        worker.stop.request("test over")
        thread.join(30)
    for jid in jids:
        assert cut < gone[jid] <= expiry - margin_for(LEASE) + LATE
        job = direct.get_job(jid)
        assert job is not None and job.state == "running"  # left to expire
    assert worker.outcomes["lock lost"] == 3
    assert worker.outcomes["completed"] == worker.outcomes["failed"] == 0
    assert not thread.is_alive()
