"""Jobs of the fault suite: each execution is written to the ledger outside the Redis under test."""

from __future__ import annotations

import asyncio
import os
import signal
import time

from django_qless.core import Job
from django_qless.decorators import qless_job
from tests.faults import ledger

#: Longest single sleep of a job: a slot thread's interruption (`--concurrency` N > 1)
#: takes effect between calls, never inside one (docs/pages/worker.md), so jobs nap in
#: slices and stop within one, as a signal stops the serial worker's job at once.
NAP = 0.05


def nap(seconds: float) -> None:
    """Sleep `seconds` in slices of at most NAP."""
    until = time.monotonic() + seconds
    while (left := until - time.monotonic()) > 0:
        time.sleep(min(left, NAP))


class PlannedFailureError(Exception):
    """Raised by jobs asked to fail (the load benchmark's 5%)."""


def first_execution(job: Job) -> bool:
    """True the first time the job is popped (history holds one `popped` entry)."""
    return sum(1 for entry in job.history if entry.what == "popped") <= 1


@qless_job(name="faults.work", takes_job=True)
def work(job: Job, ms: float = 0, fail: bool = False, kill: bool = False) -> None:
    """Record the start, optionally kill our own process (first run only), sleep, record the end.

    An interruption by the worker (lock lost, time limit, shutdown) is recorded as `abort`
    before it propagates, so the ledger knows when that execution really stopped.
    """
    ledger.record(job, "start")
    if kill and first_execution(job):
        # The job's process dies mid-job: the bench's "1% of job processes killed".
        ledger.record(job, "killed")
        os.kill(os.getpid(), signal.SIGKILL)
    try:
        if ms:
            nap(ms / 1000)
    except BaseException:
        ledger.record(job, "abort")
        raise
    if fail:
        raise PlannedFailureError(f"job {job.jid} fails on purpose")
    ledger.record(job, "end")


@qless_job(name="faults.awork", takes_job=True)
async def awork(job: Job, ms: float = 0) -> None:
    """`work` as an `async def` job: its sleep awaited on the worker's event loop."""
    ledger.record(job, "start")
    try:
        await asyncio.sleep(ms / 1000)
    except BaseException:
        ledger.record(job, "abort")
        raise
    ledger.record(job, "end")


@qless_job(name="faults.touch_db", takes_job=True)
def touch_db(job: Job) -> None:
    """Write a row through the ORM and read it back (on the slot thread's connection)."""
    from tests.faults.app.models import Touch  # noqa: PLC0415 - only where the app is installed

    ledger.record(job, "start")
    Touch.objects.create(jid=job.jid, pid=os.getpid())
    if not Touch.objects.filter(jid=job.jid).exists():
        raise LookupError(f"the row of {job.jid} is not there")
    ledger.record(job, "end")


@qless_job(name="faults.atouch_db", takes_job=True)
async def atouch_db(job: Job) -> None:
    """`touch_db` as an `async def` job, through Django's async ORM."""
    from tests.faults.app.models import Touch  # noqa: PLC0415 - only where the app is installed

    ledger.record(job, "start")
    await Touch.objects.acreate(jid=job.jid, pid=os.getpid())
    if not await Touch.objects.filter(jid=job.jid).aexists():
        raise LookupError(f"the row of {job.jid} is not there")
    ledger.record(job, "end")


@qless_job(name="faults.long_once", takes_job=True)
def long_once(job: Job, seconds: float) -> None:
    """Sleep `seconds` on the first execution only; later executions (the recovery) are quick."""
    ledger.record(job, "start")
    try:
        if first_execution(job):
            nap(seconds)
    except BaseException:
        ledger.record(job, "abort")
        raise
    ledger.record(job, "end")


#: How often `faults.ticking` writes a `tick` (seconds): an execution stopped without a
#: word (its process killed) ended at most this long after its last tick.
TICK = 0.1


@qless_job(name="faults.ticking", takes_job=True)
def ticking(job: Job, seconds: float) -> None:
    """Record the start, a `tick` every TICK seconds while running, then the end.

    In short naps, so an interruption outside the main thread lands within a tick too.
    """
    ledger.record(job, "start")
    until = time.monotonic() + seconds
    try:
        while time.monotonic() < until:
            time.sleep(TICK)
            ledger.record(job, "tick")
    except BaseException:
        ledger.record(job, "abort")
        raise
    ledger.record(job, "end")
