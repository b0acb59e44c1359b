"""B2/B6/B7 with `--isolation process`: a job that hangs, swallows its time limit, crashes
its process or eats memory is killed and failed within a second; its worker lives on.

Also: crashes are loud (a supervisor logs a dead worker process at ERROR with its jid;
faulthandler is on in the worker processes). Jobs record into the Redis list of
`tests.workerapp.qless_jobs` (with the pid of the process that ran them).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import Any

import pytest

from django_qless.core import Client, Job
from django_qless.results import RESULT_KEY
from tests.faults.checks import compressed_time, qless_client
from tests.faults.fleet import FAST, Fleet
from tests.redis_harness import RedisServer
from tests.support import wait_for
from tests.workerapp.qless_jobs import LEDGER

pytestmark = [pytest.mark.faults, pytest.mark.timeout(90)]

ISOLATED = ("--isolation", "process")
#: How soon a killed or crashed job must be failed (from its start, or from its hard limit).
WITHIN = 1.0


def put(client: Client, klass: str, *args: Any) -> str:
    """Put one job in queue `q` in the worker's data format."""
    return client.queue("q").put(klass, {"args": list(args), "kwargs": {}})


def entries(client: Client, jid: str, event: str) -> list[dict[str, Any]]:
    """The ledger entries of one job with this event."""
    every = [json.loads(item) for item in client.redis.lrange(LEDGER, 0, -1)]
    return [entry for entry in every if entry["jid"] == jid and entry["event"] == event]


def ended(client: Client, jid: str, timeout: float) -> tuple[Job, float]:
    """Wait for the job to be failed or complete; the job and when (wall clock) it was seen."""
    job = wait_for(lambda: _finished(client, jid), timeout, every=0.02, what=f"job {jid}")
    return job, time.time()


def _finished(client: Client, jid: str) -> Job | None:
    job = client.get_job(jid)
    return job if job is not None and job.state in ("failed", "complete") else None


def started_at(client: Client, jid: str) -> float:
    """Wall-clock time the job's (only) execution started."""
    starts = wait_for(lambda: entries(client, jid, "start"), 10, what=f"{jid} started")
    return float(starts[0]["t"])


def test_a_job_swallowing_its_time_limit_is_killed_at_the_hard_limit_and_runs_once(
    server: RedisServer, fleets: Callable[..., Fleet], figures: dict[str, Any],
) -> None:
    client = qless_client(server)
    compressed_time(client)
    # The hard limit is past lease + grace (3 s + 1 s): the lease must be renewed until the
    # kill, or the second worker would be handed the job while the first still runs it.
    hard = 5.0
    fleet = fleets(server.url, 2, "q", *FAST, *ISOLATED, "--hard-time-limit", str(hard))
    jid = put(client, "worker.swallow_all")
    start = started_at(client, jid)
    job, seen = ended(client, jid, hard + 5)
    late = seen - (start + hard)
    starts = entries(client, jid, "start")
    figures.update(hard_limit=hard, failed_after=round(seen - start, 2),
                   after_hard_limit=round(late, 2), executions=len(starts),
                   swallowed=len(entries(client, jid, "swallowed")), restarts=fleet.restarts)
    assert job.failure is not None and job.failure.group == "q-TimeLimitExceeded"
    assert "hard time limit of 5s exceeded" in job.failure.message
    assert "swallow_all" in job.failure.message  # the stack it was killed in
    assert entries(client, jid, "swallowed"), "the soft limit was raised inside the job"
    assert late <= WITHIN
    assert len(starts) == 1, starts
    assert fleet.restarts == 0


@pytest.mark.parametrize(("how", "says"), [
    ("segfault", "killed by signal SIGSEGV"),
    ("exit", "exited with status 3"),
    ("abort", "killed by signal SIGABRT"),
    ("sigkill", "killed by signal SIGKILL"),
])
def test_a_job_that_kills_its_process_fails_at_once_and_its_worker_lives_on(
    server: RedisServer, fleets: Callable[..., Fleet], figures: dict[str, Any],
    how: str, says: str,
) -> None:
    client = qless_client(server)
    fleet = fleets(server.url, 1, "q", *FAST, *ISOLATED)
    worker_pid = fleet.pids()[0]
    jid = put(client, "worker.crash", how)
    start = started_at(client, jid)
    job, seen = ended(client, jid, 10)
    after = put(client, "worker.noop")
    next_job, _ = ended(client, after, 10)
    figures.update(crash=how, failed_after=round(seen - start, 2), restarts=fleet.restarts)
    assert job.failure is not None and job.failure.group == "q-ChildProcessDied"
    assert says in job.failure.message
    if how in ("segfault", "abort"):
        assert "faulthandler output of the job's process" in job.failure.message
        assert "qless_jobs.py" in job.failure.message  # the crashing job's frame
    assert seen - start <= WITHIN
    assert next_job.state == "complete"
    assert fleet.live_pids() == [worker_pid] and fleet.restarts == 0


def test_a_job_over_its_memory_cap_is_killed_and_failed(
    server: RedisServer, fleets: Callable[..., Fleet], figures: dict[str, Any],
) -> None:
    client = qless_client(server)
    cap = 300
    fleet = fleets(server.url, 1, "q", *FAST, *ISOLATED, "--job-memory", str(cap))
    worker_pid = fleet.pids()[0]
    jid = put(client, "worker.hog", 2048)
    start = started_at(client, jid)
    job, seen = ended(client, jid, 20)
    figures.update(cap_mib=cap, failed_after=round(seen - start, 2), restarts=fleet.restarts)
    assert job.failure is not None and job.failure.group == "q-MemoryLimitExceeded"
    assert f"above JOB_MEMORY_MB {cap}" in job.failure.message
    assert not entries(client, jid, "end")
    assert fleet.live_pids() == [worker_pid] and fleet.restarts == 0


def test_a_cancelled_jobs_process_is_killed_within_a_second(
    server: RedisServer, fleets: Callable[..., Fleet], figures: dict[str, Any],
) -> None:
    client = qless_client(server)
    fleet = fleets(server.url, 1, "q", *FAST, *ISOLATED)
    jid = put(client, "worker.sleep", 60)
    child = wait_for(lambda: entries(client, jid, "start"), 10, what="the start")[0]["pid"]
    cancelled = time.monotonic()
    client.cancel(jid)
    wait_for(lambda: not _alive(child), WITHIN + 1, every=0.02, what="the child's end")
    gone_after = time.monotonic() - cancelled
    after = put(client, "worker.noop")
    next_job, _ = ended(client, after, 10)
    figures.update(killed_after=round(gone_after, 2), restarts=fleet.restarts)
    assert child not in fleet.pids()
    assert gone_after <= WITHIN
    assert next_job.state == "complete" and fleet.restarts == 0


def _alive(pid: int) -> bool:
    """Whether a process (not yet reaped) exists."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_supervisor_logs_a_dead_worker_process_at_error_with_its_jid(
    server: RedisServer, fleets: Callable[..., Fleet], figures: dict[str, Any],
) -> None:
    client = qless_client(server)
    compressed_time(client)
    fleet = fleets(server.url, 1, "q", *FAST, "--processes", "2")
    jid = put(client, "worker.crash", "sigkill")
    line = wait_for(lambda: _error_line(fleet, jid), 15, every=0.05, what="the ERROR line")
    figures.update(logged=True)
    assert "was killed by signal SIGKILL while running job" in line


def _error_line(fleet: Fleet, jid: str) -> str | None:
    """The supervisor's ERROR line naming `jid`, if logged yet."""
    lines = fleet.output().splitlines()
    return next((line for line in lines if " ERROR " in line and jid in line), None)


@pytest.mark.parametrize("mode", [("--processes", "2"), ISOLATED])
def test_faulthandler_is_on_in_the_process_running_jobs(
    server: RedisServer, fleets: Callable[..., Fleet], figures: dict[str, Any],
    mode: tuple[str, ...],
) -> None:
    client = qless_client(server)
    fleet = fleets(server.url, 1, "q", *FAST, *mode)
    jid = put(client, "worker.process_facts")
    job, _ = ended(client, jid, 15)
    facts = job.data[RESULT_KEY]
    figures.update(mode=" ".join(mode), faulthandler=facts["faulthandler"])
    assert facts["pid"] not in fleet.pids()  # a worker process forked by the command
    assert facts["faulthandler"] is True
