"""B8 and B6: a running job changed by an admin, and a job that hangs past its time limit.

B8: while a real `qless_worker` runs a long job, another client changes it as the admin
does: moves it to another queue (`requeue`, or a plain `put` of the same jid), cancels
it, times it out, or changes its priority. The first four take the job from the worker:
qless publishes `lock_lost` or `canceled` on the worker's channel, and the worker must
stop the job within 1 s, write nothing for that execution (no complete, fail or retry),
log no error and keep working. A moved or timed-out job runs once more, from where it
went. A priority change is no lock loss: the job runs on and completes once.

B6: a job sleeping far past the worker's `--time-limit` is stopped at the limit (+- 1 s),
fails into `<queue>-TimeLimitExceeded`, and is never heartbeated after it stopped.

Redis MONITOR records every script command with Redis' time, so "nothing written" and
"no heartbeat" are checked on the wire, not only in the job's final state.
"""

from __future__ import annotations

import math
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import redis

from django_qless.core import Client
from tests.faults import ledger
from tests.faults.checks import audited, compressed_time, put_jobs, qless_client
from tests.faults.fleet import FAST, Fleet
from tests.redis_harness import RedisServer
from tests.support import wait_for

pytestmark = [pytest.mark.faults, pytest.mark.timeout(30)]

Fleets = Callable[..., Fleet]
OTHER = "other"
#: The longest a change may take to stop the running job (plan B8).
KILL_BUDGET = 1.0
#: The worker's time limit in B6 (the lease is 3 s, renewed every second).
LIMIT = 2.5
#: How long B6 watches the failed job for a heartbeat: more than two renewal intervals.
QUIET = 2.5


@dataclass(frozen=True)
class Call:
    """One qless script command as Redis ran it: Redis' time, command, arguments after `now`."""

    t: float
    command: str
    args: tuple[str, ...]


class Wire(threading.Thread):
    """Records the qless commands Redis runs (through MONITOR) until `stop()`."""

    def __init__(self, server: RedisServer) -> None:
        super().__init__(name="faults-wire", daemon=True)
        self.watcher = redis.Redis.from_url(server.url)
        self.calls: list[Call] = []
        self.ready = threading.Event()
        self.marker = f"wire-stop-{uuid.uuid4().hex}"

    def run(self) -> None:
        """Read MONITOR lines until our own stop marker comes by."""
        with self.watcher.monitor() as monitor:  # type: ignore[no-untyped-call]
            self.ready.set()
            while True:
                line: dict[str, Any] = monitor.next_command()
                words = str(line["command"]).split(" ")
                if self.marker in words:
                    return
                # Script calls from clients; `redis.call`s inside the script are "lua".
                # EVALSHA of the script or FCALL of its library: the same words after it.
                if line["client_type"] != "lua" and words[0].upper() in ("EVALSHA", "FCALL") \
                        and len(words) > 4:
                    self.calls.append(Call(float(line["time"]), words[3], tuple(words[5:])))

    def stop(self) -> None:
        """Send the marker and wait until everything Redis ran before it is recorded."""
        if self.is_alive():
            self.watcher.echo(self.marker)
            self.join(5)
        assert not self.is_alive(), "the MONITOR reader did not stop"
        self.watcher.close()

    def about(self, jid: str, command: str, after: float = -math.inf,
              before: float = math.inf) -> list[Call]:
        """The calls of `command` on `jid` that Redis ran strictly between two times (a
        `complete` also as the first half of the worker's `complete.pop`)."""
        names = {command, f"{command}.pop"} if command == "complete" else {command}
        return [call for call in self.calls
                if call.command in names and call.args[:1] == (jid,) and after < call.t < before]


@pytest.fixture
def wire(server: RedisServer) -> Iterator[Wire]:
    """A MONITOR recorder on the test's server, running before any worker starts."""
    recorder = Wire(server)
    recorder.start()
    assert recorder.ready.wait(5), "MONITOR did not start"
    yield recorder
    recorder.stop()


@pytest.fixture
def client(server: RedisServer) -> Client:
    """The admin's (and the test's) client, leases compressed."""
    made = qless_client(server)
    compressed_time(made)
    return made


def entries(fleets: list[Fleet], jid: str, event: str) -> list[ledger.Entry]:
    """The ledger entries of one job and kind, over several fleets, by time."""
    found = [entry for fleet in fleets for entry in ledger.read(fleet.ledger_dir)
             if entry.jid == jid and entry.event == event]
    return sorted(found, key=lambda entry: entry.t)


def state(client: Client, jid: str) -> str:
    """The job's state ("" once it is gone)."""
    job = client.get_job(jid)
    return job.state if job is not None else ""


def whats(client: Client, jid: str) -> list[str]:
    """The job's history, event names only."""
    job = client.get_job(jid)
    assert job is not None
    return [entry.what for entry in job.history]


def errors(log: str) -> int:
    """Lines logged at ERROR level (the fault settings' format has the level by itself)."""
    return sum(1 for line in log.splitlines() if " ERROR " in line)


def take_away(client: Client, jid: str, how: str) -> float:
    """Change the running job as the admin would; returns the wall time right before it."""
    job = client.get_job(jid)
    assert job is not None and job.state == "running"
    changed_at = time.time()
    if how == "move":
        job.move(OTHER)  # the admin's move: `requeue` into the other queue
    elif how == "put":
        client.queue(OTHER).put(job.klass, job.data, jid=jid)
    elif how == "cancel":
        client.cancel(jid)
    elif how == "timeout":
        client.timeout(jid)
    else:
        raise ValueError(how)
    return changed_at


#: What each change leaves: the reason the worker logs, executions, the end state.
TAKEN = {
    "move": ("lock_lost", 2, "complete"),
    "put": ("lock_lost", 2, "complete"),
    "timeout": ("lock_lost", 2, "complete"),
    "cancel": ("canceled", 1, ""),
}


@pytest.mark.parametrize("how", list(TAKEN))
def test_b8_a_change_that_takes_the_job_stops_it(
    how: str, client: Client, server: RedisServer, fleets: Fleets, wire: Wire,
    figures: dict[str, Any],
) -> None:
    reason, executions, end_state = TAKEN[how]
    (jid,) = put_jobs(client, 1, lambda n: {"seconds": 60}, klass="faults.long_once")
    fleet = fleets(server.url, 1, "q", *FAST, restart=False)
    used = [fleet]
    first = wait_for(lambda: entries(used, jid, "start"), 15, what="the long job's start")[0]
    time.sleep(1.2)  # a renewal later: the job is well into its run
    changed_at = take_away(client, jid, how)
    stop = wait_for(lambda: entries(used, jid, "abort"), 5, what="the job's stop")[0]
    wait_for(lambda: f"job {jid} stopped, its result discarded: {reason}" in fleet.output(), 5,
             what="the worker discarding the result")
    # The worker keeps working: a job put after the change runs.
    (after,) = put_jobs(client, 1, lambda n: {"ms": 0})
    wait_for(lambda: state(client, after) == "complete", 10, what="a job after the change")
    if how in ("move", "put"):
        # Nothing written by the worker: the job waits in the other queue as it was left.
        moved = client.get_job(jid)
        assert moved is not None
        assert (moved.state, moved.queue_name, whats(client, jid)) == (
            "waiting", OTHER, ["put", "popped", "put"])
        used.append(fleets(server.url, 1, OTHER, *FAST, restart=False))
    if end_state:
        wait_for(lambda: state(client, jid) == end_state, 15, what=f"the job {end_state}")
    runs = entries(used, jid, "start")
    ends = entries(used, jid, "end")
    wire.stop()
    later = runs[1].t if len(runs) > 1 else math.inf
    heartbeats_after = wire.about(jid, "heartbeat", after=stop.t, before=later)
    completes = wire.about(jid, "complete")
    report = audited(client, used[-1])
    log = fleet.output()
    latency = stop.t - changed_at
    figures.update(change=how, kill_latency=round(latency, 3), executions=len(runs),
                   completes_sent=len(completes), fails_sent=len(wire.about(jid, "fail")),
                   heartbeats_after_stop=len(heartbeats_after), error_lines=errors(log),
                   state=state(client, jid) or "gone",
                   audit="clean" if report.clean else "DIRTY")
    assert stop.pid == first.pid and 0 <= latency <= KILL_BUDGET
    # Stopped by the channel event, not by the next renewal being refused.
    assert wire.about(jid, "heartbeat", after=changed_at, before=stop.t) == []
    assert len(runs) == executions <= 2
    # The stopped execution wrote nothing: one complete per execution that reached its end.
    assert len(completes) == len(ends) == executions - 1
    assert all(call.t > stop.t for call in completes)
    assert wire.about(jid, "fail") == [] and wire.about(jid, "retry") == []
    assert heartbeats_after == []
    assert state(client, jid) == end_state
    if how == "timeout":
        assert whats(client, jid) == ["put", "popped", "timed-out", "popped", "done"]
    assert "Traceback" not in log and errors(log) == 0, log
    assert report.clean, report.summary()


def test_b8_a_priority_change_does_not_stop_the_job(
    client: Client, server: RedisServer, fleets: Fleets, wire: Wire, figures: dict[str, Any],
) -> None:
    (jid,) = put_jobs(client, 1, lambda n: {"ms": 2500})
    fleet = fleets(server.url, 1, "q", *FAST, restart=False)
    start = wait_for(lambda: entries([fleet], jid, "start"), 15, what="the job's start")[0]
    time.sleep(0.5)
    job = client.get_job(jid)
    assert job is not None and job.state == "running"
    job.set_priority(50)
    wait_for(lambda: state(client, jid) == "complete", 10, what="the job's completion")
    wire.stop()
    done = client.get_job(jid)
    assert done is not None
    ends = entries([fleet], jid, "end")
    report = audited(client, fleet)
    log = fleet.output()
    figures.update(change="priority", executions=len(entries([fleet], jid, "start")),
                   aborts=len(entries([fleet], jid, "abort")),
                   ran=round(ends[0].t - start.t, 2) if ends else None,
                   completes_sent=len(wire.about(jid, "complete")), error_lines=errors(log),
                   audit="clean" if report.clean else "DIRTY")
    assert entries([fleet], jid, "abort") == []
    assert len(entries([fleet], jid, "start")) == len(ends) == 1
    assert ends[0].t - start.t >= 2.5  # it slept its whole time
    assert done.priority == 50
    assert [entry.what for entry in done.history].count("done") == 1
    assert "timed-out" not in [entry.what for entry in done.history]
    assert len(wire.about(jid, "complete")) == 1
    assert "result discarded" not in log
    assert "Traceback" not in log and errors(log) == 0, log
    assert report.clean, report.summary()


def test_b6_a_hung_job_is_stopped_at_its_time_limit(
    client: Client, server: RedisServer, fleets: Fleets, wire: Wire, figures: dict[str, Any],
) -> None:
    (jid,) = put_jobs(client, 1, lambda n: {"ms": 600_000})
    fleet = fleets(server.url, 1, "q", *FAST, "--time-limit", str(LIMIT), restart=False)
    start = wait_for(lambda: entries([fleet], jid, "start"), 15, what="the job's start")[0]
    stop = wait_for(lambda: entries([fleet], jid, "abort"), LIMIT + 5, what="the stop")[0]
    failed = wait_for(lambda: state(client, jid) == "failed" and client.get_job(jid), 5,
                      what="the failure")
    time.sleep(QUIET)  # room for two renewals, if anything still renewed the job
    later = client.get_job(jid)
    assert later is not None
    # The worker keeps working after the stop.
    (after,) = put_jobs(client, 1, lambda n: {"ms": 0})
    wait_for(lambda: state(client, after) == "complete", 10, what="a job after the stop")
    wire.stop()
    heartbeats = wire.about(jid, "heartbeat")
    fails = wire.about(jid, "fail")
    stopped_after = stop.t - start.t
    report = audited(client, fleet)
    figures.update(limit=LIMIT, stopped_after=round(stopped_after, 3),
                   group=failed.failure.group if failed.failure else None,
                   heartbeats_before_stop=len([c for c in heartbeats if c.t <= stop.t]),
                   heartbeats_after_stop=len([c for c in heartbeats if c.t > stop.t]),
                   fails_sent=len(fails), expires_after=later.expires,
                   audit="clean" if report.clean else "DIRTY")
    assert abs(stopped_after - LIMIT) <= 1.0
    assert failed.failure is not None and failed.failure.group == "q-TimeLimitExceeded"
    assert "TimeLimitExceeded" in failed.failure.message
    # It was renewed while it hung (the monitor thread was alive), and never after the stop.
    assert [c for c in heartbeats if c.t <= stop.t]
    assert [c for c in heartbeats if c.t > stop.t] == []
    assert len(fails) == 1 and fails[0].t >= stop.t
    # Nothing changed the failed job afterwards: no lease, no history entry after its fail
    # (the worker records the attempt's task-error just before failing it).
    assert (later.state, later.expires, later.worker) == ("failed", 0, "")
    assert [entry.what for entry in later.history] == ["put", "popped", "task-error", "failed"]
    assert len(entries([fleet], jid, "start")) == 1
    assert report.clean, report.summary()
