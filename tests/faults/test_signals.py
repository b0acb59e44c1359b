"""B3: SIGTERM during a short job, a long job, while idle, and a second signal.

One worker with a 10 s shutdown deadline (`--shutdown-timeout 10`), compressed leases,
at each concurrency of `AT_EACH_CONCURRENCY`. The plan's figures: (a) the short job (one
in every slot) completes, exit 0 <= 2.5 s after the signal, no pop after it; (b) the
long job (one in every slot) is handed back <= 11 s (waiting, `remaining` intact,
history shows the hand-back by this worker and the put), another worker completes it, 2
executions; (c) idle: exit <= 1 s; (d) a second signal: immediate exit != 0, the job is
recovered by lease expiry within lease + grace (+ one poll). Nothing stays running for a
dead worker (audit). tests/worker covers the mechanics with other timings.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from typing import Any

import pytest

from django_qless.core import Client
from tests.faults import ledger
from tests.faults.checks import (
    AT_EACH_CONCURRENCY,
    GRACE,
    HEARTBEAT,
    POLL,
    audited,
    compressed_time,
    put_jobs,
    qless_client,
)
from tests.faults.fleet import FAST, Fleet
from tests.redis_harness import RedisServer
from tests.support import wait_for

pytestmark = [pytest.mark.faults, pytest.mark.timeout(90), AT_EACH_CONCURRENCY]

DEADLINE = 10
Fleets = Callable[..., Fleet]


def one_worker(fleets: Fleets, server: RedisServer) -> tuple[Fleet, int]:
    """A fleet of one worker that is not restarted; returns it and the worker's pid."""
    fleet = fleets(server.url, 1, "q", *FAST, "--shutdown-timeout", str(DEADLINE),
                   restart=False)
    return fleet, fleet.pids()[0]


def started(fleet: Fleet, jid: str) -> list[ledger.Entry]:
    """The executions of a job so far."""
    return ledger.starts(ledger.read(fleet.ledger_dir)).get(jid, [])


def whats(client: Client, jid: str) -> list[str]:
    """The job's history, event names only."""
    job = client.get_job(jid)
    assert job is not None
    return [entry.what for entry in job.history]


@pytest.fixture
def client(server: RedisServer) -> Client:
    """The test's qless client, leases compressed."""
    made = qless_client(server)
    compressed_time(made)
    return made


def test_a_sigterm_during_a_short_job(client: Client, server: RedisServer, fleets: Fleets,
                                      figures: dict[str, Any], concurrency: int) -> None:
    # A short job in every slot, and one more that must never be popped after the signal.
    *short, after = put_jobs(client, concurrency + 1,
                             lambda n: {"ms": 2000 if n < concurrency else 0})
    fleet, pid = one_worker(fleets, server)
    wait_for(lambda: all(started(fleet, jid) for jid in short), 15,
             what="the short jobs' starts")
    sent = fleet.send(pid, signal.SIGTERM)
    code = fleet.wait_exit(pid, 15)
    exit_after, exited = time.monotonic() - sent, time.time()
    ends = [entry.t for entry in ledger.read(fleet.ledger_dir)
            if entry.event == "end" and entry.jid in short]
    after_last_end = exited - max(ends, default=exited)
    figures.update(jobs=len(short) + 1, exit_code=code, exit_after=round(exit_after, 2),
                   after_last_end=round(after_last_end, 2),
                   pops_after_signal=len(whats(client, after)) - 1)
    assert code == 0, fleet.output()
    # The running jobs finish (up to their 2 s), then the worker exits promptly: measured
    # from their end, as what is left of a job when the signal comes varies with the load.
    assert len(ends) == len(short)
    assert after_last_end <= 1.0
    assert exit_after <= 2.0 + 1.0
    states = [job.state for job in map(client.get_job, short) if job is not None]
    assert states == ["complete"] * len(short)
    assert whats(client, after) == ["put"]  # never popped after the signal
    assert audited(client, fleet).clean


def test_b_sigterm_during_long_jobs_hands_them_back(
    client: Client, server: RedisServer, fleets: Fleets, figures: dict[str, Any],
    concurrency: int,
) -> None:
    # A long job in every slot: each is handed back at the deadline.
    jids = put_jobs(client, concurrency, lambda n: {"seconds": 60}, klass="faults.long_once",
                    retries=3)
    fleet, pid = one_worker(fleets, server)
    wait_for(lambda: all(started(fleet, jid) for jid in jids), 15,
             what="the long jobs' starts")
    worker = started(fleet, jids[0])[0].worker
    sent = fleet.send(pid, signal.SIGTERM)
    code = fleet.wait_exit(pid, DEADLINE + 5)
    handed_back_after = time.monotonic() - sent
    jobs = [client.get_job(jid) for jid in jids]
    figures.update(jobs=len(jids), exit_code=code, handed_back_after=round(handed_back_after, 2),
                   remaining=sorted({job.remaining for job in jobs if job is not None}))
    assert code == 0, fleet.output()
    assert DEADLINE <= handed_back_after <= DEADLINE + 1
    for job in jobs:
        assert job is not None
        assert (job.state, job.remaining, job.retries) == ("waiting", 3, 3)
        history = [(entry.what, entry.extra) for entry in job.history]
        assert [what for what, _ in history] == ["put", "popped", "handed-back", "put"]
        assert history[2][1]["worker"] == worker
    # Another worker completes them: two executions of each in all.
    other = fleets(server.url, 1, "q", *FAST)
    wait_for(lambda: all(client.get_job(jid).state == "complete"  # type: ignore[union-attr]
                         for jid in jids), 15, what="the other worker's completions")
    runs = [started(fleet, jid) + started(other, jid) for jid in jids]
    figures["executions"] = sum(len(each) for each in runs)
    assert all(len(each) == 2 and each[1].pid != pid for each in runs)
    assert audited(client, other).clean


def test_c_sigterm_while_idle(client: Client, server: RedisServer, fleets: Fleets,
                              figures: dict[str, Any]) -> None:
    fleet, pid = one_worker(fleets, server)
    # Idle = subscribed to ql:log, waiting for a put.
    wait_for(lambda: dict(client.redis.pubsub_numsub("ql:log")).get(b"ql:log", 0) >= 1, 15,
             what="the idle worker's subscription")
    sent = fleet.send(pid, signal.SIGTERM)
    code = fleet.wait_exit(pid, 5)
    exit_after = time.monotonic() - sent
    figures.update(jobs=0, exit_code=code, exit_after=round(exit_after, 2))
    assert code == 0, fleet.output()
    assert exit_after <= 1.0


def test_d_second_signal_exits_at_once_and_expiry_recovers_the_job(
    client: Client, server: RedisServer, fleets: Fleets, figures: dict[str, Any],
) -> None:
    (jid,) = put_jobs(client, 1, lambda n: {"seconds": 60}, klass="faults.long_once")
    fleet, pid = one_worker(fleets, server)
    wait_for(lambda: started(fleet, jid), 15, what="the long job's start")
    standby = fleets(server.url, 1, "q", *FAST)  # idle, ready to take the job over
    wait_for(lambda: dict(client.redis.pubsub_numsub("ql:log")).get(b"ql:log", 0) >= 1, 15,
             what="the standby worker's subscription")
    fleet.send(pid, signal.SIGTERM)
    time.sleep(0.2)
    sent = fleet.send(pid, signal.SIGTERM)
    code = fleet.wait_exit(pid, 5)
    exited = time.monotonic()
    # The lease left by the last renewal before the exit (the worker's clock is the wall's).
    expires = float(client.get_job(jid).expires)  # type: ignore[union-attr]
    recovered = wait_for(lambda: started(standby, jid), HEARTBEAT + GRACE + 3,
                         what="the recovery by expiry")
    recovered_after = recovered[0].t - (time.time() - (time.monotonic() - exited))
    renewed_before_exit = expires - HEARTBEAT - (time.time() - (time.monotonic() - exited))
    wait_for(lambda: client.get_job(jid).state == "complete", 10,  # type: ignore[union-attr]
             what="the standby's completion")
    figures.update(jobs=1, exit_code=code, exit_after=round(exited - sent, 2),
                   recovered_after=round(recovered_after, 2),
                   renewed_before_exit=round(-renewed_before_exit, 2),
                   executions=len(started(fleet, jid) + started(standby, jid)))
    assert code != 0
    assert exited - sent <= 0.5
    assert "second signal" in fleet.output(pid)
    # Counted from the last renewal: lease + grace + one poll (and some scheduling).
    assert recovered[0].t - (expires - HEARTBEAT) <= HEARTBEAT + GRACE + POLL + 0.3
    assert "timed-out" in whats(client, jid)
    assert audited(client, standby).clean
