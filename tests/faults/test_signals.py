"""B3: SIGTERM during a short job, a long job, while idle, and a second signal.

One worker with a 10 s shutdown deadline (`--shutdown-timeout 10`), compressed leases.
The plan's figures: (a) the short job completes, exit 0 <= 2.5 s after the signal, no pop
after it; (b) the long job is handed back <= 11 s (waiting, `remaining` intact, history
shows the hand-back by this worker and the put), another worker completes it, 2
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

pytestmark = [pytest.mark.faults, pytest.mark.timeout(90)]

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
                                      figures: dict[str, Any]) -> None:
    short, after = put_jobs(client, 2, lambda n: {"ms": 2000 if n == 0 else 0})
    fleet, pid = one_worker(fleets, server)
    wait_for(lambda: started(fleet, short), 15, what="the short job's start")
    sent = fleet.send(pid, signal.SIGTERM)
    code = fleet.wait_exit(pid, 15)
    exit_after = time.monotonic() - sent
    figures.update(jobs=2, exit_code=code, exit_after=round(exit_after, 2),
                   pops_after_signal=len(whats(client, after)) - 1)
    assert code == 0, fleet.output()
    assert exit_after <= 2.5
    assert client.get_job(short).state == "complete"  # type: ignore[union-attr]
    assert whats(client, after) == ["put"]  # never popped after the signal
    assert audited(client, fleet).clean


def test_b_sigterm_during_a_long_job_hands_it_back(
    client: Client, server: RedisServer, fleets: Fleets, figures: dict[str, Any],
) -> None:
    (jid,) = put_jobs(client, 1, lambda n: {"seconds": 60}, klass="faults.long_once",
                      retries=3)
    fleet, pid = one_worker(fleets, server)
    first = wait_for(lambda: started(fleet, jid), 15, what="the long job's start")
    sent = fleet.send(pid, signal.SIGTERM)
    code = fleet.wait_exit(pid, DEADLINE + 5)
    handed_back_after = time.monotonic() - sent
    job = client.get_job(jid)
    assert job is not None
    figures.update(jobs=1, exit_code=code, handed_back_after=round(handed_back_after, 2),
                   remaining=job.remaining)
    assert code == 0, fleet.output()
    assert DEADLINE <= handed_back_after <= DEADLINE + 1
    assert (job.state, job.remaining, job.retries) == ("waiting", 3, 3)
    history = [(entry.what, entry.extra) for entry in job.history]
    assert [what for what, _ in history] == ["put", "popped", "handed-back", "put"]
    assert history[2][1]["worker"] == first[0].worker
    # Another worker completes it: two executions in all.
    other = fleets(server.url, 1, "q", *FAST)
    wait_for(lambda: client.get_job(jid).state == "complete", 15,  # type: ignore[union-attr]
             what="the other worker's completion")
    runs = started(fleet, jid) + started(other, jid)
    figures["executions"] = len(runs)
    assert len(runs) == 2 and runs[1].pid != pid
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
