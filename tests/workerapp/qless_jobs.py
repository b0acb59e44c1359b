"""Jobs run by the worker tests; each one writes what it did to the Redis list `LEDGER`."""

from __future__ import annotations

import asyncio
import ctypes
import faulthandler
import json
import logging
import os
import random
import signal
import threading
import time
from typing import Any

from asgiref.sync import sync_to_async
from django.db import connections

from django_qless.core import Job, RetryJob
from django_qless.decorators import qless_job
from django_qless.retry import RetryPolicy

LEDGER = "test:ledger"

# A job module that takes a while to import (as one loading a heavy library does), for the
# start-up signal tests: each process importing it appends its pid to the file named.
if os.environ.get("QLESS_TEST_SLOW_IMPORT"):
    with open(os.environ["QLESS_TEST_SLOW_IMPORT"], "a") as importing:  # noqa: PTH123
        importing.write(f"{os.getpid()}\n")
    time.sleep(float(os.environ.get("QLESS_TEST_SLOW_IMPORT_SECONDS", "3")))


class HighRandom(random.Random):
    """Jitter that always picks the top of its range, so delays are predictable."""

    def uniform(self, a: float, b: float) -> float:
        return b


def record(job: Job, event: str, **extra: Any) -> None:
    """Append an entry for this execution to the ledger (in the same Redis as the jobs)."""
    entry = {"jid": job.jid, "event": event, "pid": os.getpid(), "worker": job.client.worker_name,
             "t": time.time(), "thread": threading.current_thread().name, **extra}
    job.client.redis.rpush(LEDGER, json.dumps(entry))


def ledger(client: Any) -> list[dict[str, Any]]:
    """Every ledger entry so far (tests call this with a redis client)."""
    return [json.loads(item) for item in client.lrange(LEDGER, 0, -1)]


@qless_job(name="worker.noop")
def noop() -> None:
    """Does nothing (throughput)."""


@qless_job(name="worker.mark", takes_job=True)
def mark(job: Job, tag: str = "") -> None:
    """Records one execution."""
    record(job, "run", tag=tag)


@qless_job(name="worker.sleep", takes_job=True)
def sleep(job: Job, seconds: float) -> None:
    """Records its start, sleeps, records its end."""
    record(job, "start")
    time.sleep(seconds)
    record(job, "end")


@qless_job(name="worker.sleep_first", takes_job=True)
def sleep_first(job: Job, seconds: float) -> None:
    """Sleeps on its first execution only (later executions are the recovery)."""
    first = not any(entry["jid"] == job.jid for entry in ledger(job.client.redis))
    record(job, "start")
    if first:
        time.sleep(seconds)
    record(job, "end")


@qless_job(name="worker.fail")
def fail(message: str = "boom") -> None:
    """Raises ValueError."""
    raise ValueError(message)


@qless_job(name="worker.fail_undecodable")
def fail_undecodable() -> None:
    """Raises with text holding a lone surrogate, as a file name decoded with
    surrogateescape does."""
    raise ValueError(b"bad \xff".decode("utf-8", "surrogateescape"))


@qless_job(name="worker.huge_failure")
def huge_failure() -> None:
    """Raises with a message far longer than a failure message may be."""
    raise ValueError("x" * 100_000)


@qless_job(
    name="worker.flaky",
    takes_job=True,
    retry_policy=RetryPolicy(backoff=10, factor=3, max_delay=1000, jitter=0.5, rng=HighRandom(),
                             retry_on=(ValueError,)),
)
def flaky(job: Job) -> None:
    """Always raises a retryable error."""
    record(job, "start")
    raise ValueError("try again")


@qless_job(name="worker.wants_retry")
def wants_retry(delay: float) -> None:
    """Asks qless for a retry."""
    raise RetryJob(delay=delay)


@qless_job(name="worker.slow_limited", takes_job=True, time_limit=0.3)
def slow_limited(job: Job) -> None:
    """Runs past its 0.3 s time limit."""
    record(job, "start")
    time.sleep(10)
    record(job, "end")


@qless_job(
    name="worker.slow_limited_retried",
    takes_job=True,
    time_limit=0.3,
    retry_policy=RetryPolicy(backoff=5, jitter=0, retry_on=(Exception, BaseException)),
)
def slow_limited_retried(job: Job) -> None:
    """Runs past its time limit; its policy retries anything."""
    record(job, "start")
    time.sleep(10)


@qless_job(name="worker.spin", takes_job=True, time_limit=0.3)
def spin(job: Job) -> None:
    """Busy Python loop past its time limit (no blocking call to interrupt)."""
    record(job, "start")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        pass
    record(job, "end")


@qless_job(name="worker.swallow", takes_job=True)
def swallow(job: Job, seconds: float) -> None:
    """Sleeps in a loop and swallows ordinary exceptions (not the worker's interruptions)."""
    record(job, "start")
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            time.sleep(0.05)
        except Exception:  # noqa: BLE001, S110 - the point: interruptions are not Exceptions
            pass
    record(job, "end")


@qless_job(name="worker.touch_db")
def touch_db(alias: str) -> None:
    """Opens a database connection and leaves it open."""
    with connections[alias].cursor() as cursor:
        cursor.execute("SELECT 1")


@qless_job(name="worker.atouch_db")
async def atouch_db(alias: str) -> None:
    """`touch_db` from an `async def` job, through `sync_to_async`."""
    await sync_to_async(touch_db.func)(alias)


@qless_job(name="worker.db_state", takes_job=True)
def db_state(job: Job, alias: str) -> None:
    """Records whether a connection of `alias` is open when the job starts."""
    record(job, "db", open=connections[alias].connection is not None)


@qless_job(name="worker.flush_scripts", takes_job=True)
def flush_scripts(job: Job) -> None:
    """Makes Redis forget every script, as a restart would."""
    job.client.redis.script_flush()
    record(job, "flushed")


@qless_job(name="worker.exits")
def exits() -> None:
    """Calls sys.exit() (a job bug, not a request to stop the worker)."""
    raise SystemExit(3)


@qless_job(name="worker.peek", takes_job=True)
def peek(job: Job, jid: str) -> None:
    """Records the state of another job, and which worker holds it, while this one runs."""
    other = job.client.get_job(jid)
    record(job, "peek", state=other and other.state, holder=other and other.worker)


@qless_job(name="worker.cancel", takes_job=True)
def cancel(job: Job, jid: str) -> None:
    """Cancels another job, then lets the worker hear of it before this job ends: its
    `canceled` event takes a moment to reach the monitor thread, longer on a busy machine,
    and a held job started before that is only stopped once it does."""
    job.client.cancel(jid)
    record(job, "canceled", other=jid)
    time.sleep(0.3)


# Jobs for process isolation (`--isolation process`): most would end a worker that runs
# them in its own process.


@qless_job(name="worker.swallow_all", takes_job=True, time_limit=0.3)
def swallow_all(job: Job, seconds: float = 30) -> None:
    """Catches every interruption, its time limit's included, and runs on."""
    record(job, "start")
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            time.sleep(0.05)
        except BaseException:  # noqa: BLE001 - the point: even the time limit is swallowed
            record(job, "swallowed")
    record(job, "end")


@qless_job(name="worker.crash", takes_job=True)
def crash(job: Job, how: str) -> None:
    """Ends its own process: `segfault`, `exit` (os._exit(3)), `abort` or `sigkill`."""
    record(job, "start")
    if how == "segfault":
        ctypes.string_at(0)
    elif how == "exit":
        os._exit(3)
    elif how == "abort":
        os.abort()
    elif how == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    raise ValueError(f"unknown crash {how!r}")


@qless_job(name="worker.hog", takes_job=True)
def hog(job: Job, mb: int, step_mb: int = 16) -> None:
    """Allocates `mb` MiB in steps, writing every page (so it is resident)."""
    record(job, "start")
    held = []
    for _ in range(mb // step_mb):
        held.append(b"\x01" * (step_mb << 20))
        time.sleep(0.005)
    record(job, "end", held=len(held))


@qless_job(name="worker.say", takes_job=True)
def say(job: Job, text: str) -> None:
    """Prints `text` on standard output and logs it at WARNING."""
    record(job, "start")
    print(text)  # noqa: T201 - the job's output is the point
    logging.getLogger("tests.workerapp").warning("%s (logged)", text)


@qless_job(name="worker.process_facts", takes_job=True, store_result=True)
def process_facts(job: Job) -> dict[str, Any]:
    """The process running the job: pid, parent pid, whether faulthandler is on."""
    record(job, "facts")
    return {"pid": os.getpid(), "ppid": os.getppid(), "faulthandler": faulthandler.is_enabled()}



#: What `worker.until_stopped` did, in this process: (event, detail, wall-clock time).
#: Kept in memory: the fence tests cut the job's own connection to Redis.
STOPS: list[tuple[str, str, float]] = []


@qless_job(name="worker.until_stopped")
def until_stopped(seconds: float = 30) -> None:
    """Sleeps; records its start, and when and how it was stopped (or its end).

    In short naps: run outside the main thread (as the fence tests run their worker), an
    interruption lands between two bytecodes, not inside a sleep.
    """
    STOPS.append(("start", "", time.time()))
    until = time.monotonic() + seconds
    try:
        while time.monotonic() < until:
            time.sleep(0.01)
    except BaseException as exc:
        STOPS.append(("stopped", type(exc).__name__, time.time()))
        raise
    STOPS.append(("end", "", time.time()))


@qless_job(name="worker.auntil_stopped")
async def auntil_stopped(seconds: float = 30) -> None:
    """`until_stopped` as a coroutine; its stop also says which thread it ran on."""
    STOPS.append(("start", threading.current_thread().name, time.time()))
    try:
        await asyncio.sleep(seconds)
    except BaseException as exc:
        STOPS.append(("stopped", type(exc).__name__, time.time()))
        raise
    STOPS.append(("end", "", time.time()))


@qless_job(name="worker.stubborn")
def stubborn(seconds: float = 4) -> str:
    """Naps `seconds` in all, swallowing every interruption (recorded in STOPS); returns."""
    STOPS.append(("start", "", time.time()))
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        try:
            time.sleep(0.01)
        except BaseException as exc:  # noqa: BLE001 - swallowing it is the point
            STOPS.append(("stopped", type(exc).__name__, time.time()))
    STOPS.append(("end", "", time.time()))
    return "done"


# Jobs for `--concurrency N`: they nap in short slices, so an interruption sent to a slot
# thread (at its next bytecode) lands within one slice.


def _nap(job: Job, seconds: float, cleanup: float = 0.0) -> None:
    """Record the start, nap `seconds` in slices, record the end (or the interruption,
    after `cleanup` seconds of tidying up)."""
    record(job, "start")
    until = time.monotonic() + seconds
    try:
        while time.monotonic() < until:
            time.sleep(0.02)
    except BaseException as exc:
        time.sleep(cleanup)
        record(job, "stopped", how=type(exc).__name__)
        raise
    record(job, "end")


@qless_job(name="worker.nap", takes_job=True)
def nap(job: Job, seconds: float) -> None:
    """A plain function that waits `seconds`."""
    _nap(job, seconds)


@qless_job(name="worker.nap_cleanup", takes_job=True)
def nap_cleanup(job: Job, seconds: float, cleanup: float) -> None:
    """`nap`, taking `cleanup` seconds to stop once interrupted."""
    _nap(job, seconds, cleanup)


@qless_job(name="worker.nap_limited", takes_job=True, time_limit=0.5)
def nap_limited(job: Job, seconds: float = 30) -> None:
    """A plain function over its 0.5 s time limit."""
    _nap(job, seconds)


async def _anap(job: Job, seconds: float) -> None:
    """`_nap` for a coroutine: awaits instead of sleeping."""
    record(job, "start")
    try:
        await asyncio.sleep(seconds)
    except BaseException as exc:
        record(job, "stopped", how=type(exc).__name__)
        raise
    record(job, "end")


@qless_job(name="worker.anap", takes_job=True)
async def anap(job: Job, seconds: float) -> None:
    """An `async def` job that waits `seconds`."""
    await _anap(job, seconds)


@qless_job(name="worker.anap_limited", takes_job=True, time_limit=0.5)
async def anap_limited(job: Job, seconds: float = 30) -> None:
    """An `async def` job over its 0.5 s time limit."""
    await _anap(job, seconds)


@qless_job(name="worker.athreads", takes_job=True)
async def athreads(job: Job, calls: int) -> None:
    """Records the thread each of its `calls` thread-sensitive sync calls ran on."""
    names = [await sync_to_async(lambda: threading.current_thread().name)()
             for _ in range(calls)]
    record(job, "threads", names=names)


@qless_job(name="worker.aswallow", takes_job=True, time_limit=0.3)
async def aswallow(job: Job, seconds: float = 1.5) -> None:
    """An `async def` job that catches its cancellation and naps on to its end."""
    record(job, "start")
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        record(job, "swallowed")
        await asyncio.sleep(seconds / 2)
    record(job, "end")


@qless_job(name="worker.acancels_itself", takes_job=True)
async def acancels_itself(job: Job) -> None:
    """An `async def` job whose own task is cancelled from inside (no interruption)."""
    record(job, "start")
    task = asyncio.current_task()
    assert task is not None
    task.cancel()
    await asyncio.sleep(1)
