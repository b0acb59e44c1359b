"""D1/D2: clock skew between workers, through the worker's injected clock offset.

The workers run `qless_worker` with `WorkerOptions.clock_offset` set (tests/faults/skewed.py).

qless takes `now` from its callers, so a worker whose clock runs ahead sees other
workers' locks expire early. The worker refuses to start when its clock is off Redis'
TIME by more than a quarter of the shortest lease of its queues: then two workers differ
by at most half a lease, and a lock renewed every cadence never looks expired.

- D1: workers at +30 s, 0 and -30 s (lease 120 s, so within the budget) drain jobs
  together: no lock is lost, no job runs twice. A thief clock at +30 s samples the locks
  all along: the closest any lock came to looking expired is reported.
- The detector works: a client at +120 s (beyond the budget) does take a lock that its
  owner at -30 s is renewing.
- D2: a worker beyond the budget refuses to start, with a clear message.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
import redis

from django_qless.core import Client
from tests.faults import ledger
from tests.faults.checks import (
    completed,
    outcome,
    put_jobs,
    qless_client,
)
from tests.faults.fleet import FAST, Fleet
from tests.redis_harness import RedisServer
from tests.support import wait_for

pytestmark = [pytest.mark.faults, pytest.mark.timeout(120)]

LEASE = 120
SKEW = 30
Fleets = Callable[..., Fleet]


def skewed(server: RedisServer, offset: float, name: str) -> Client:
    """A qless client whose clock is `offset` seconds off."""
    return Client(redis.Redis.from_url(server.url), clock=lambda: time.time() + offset,
                  worker_name=name)


def long_lease(server: RedisServer) -> Client:
    """The test's client, with a 120 s lease (skew budget 30 s) and a 1 s grace period."""
    client = qless_client(server)
    client.config.put("heartbeat", LEASE)
    client.config.put("grace-period", 1)
    return client


def closest_to_expiry(client: Client, stop: threading.Event, seen: list[float]) -> None:
    """Sample every lock as the fastest clock (+30 s) sees it: seconds left before expiry."""
    while not stop.is_set():
        locks = client.redis.zrange("ql:q:q-locks", 0, -1, withscores=True)
        now = time.time() + SKEW
        seen.extend(score - now for _, score in locks)
        time.sleep(0.05)


def test_skew_within_the_budget_steals_no_healthy_lock(
    server: RedisServer, fleets: Fleets, figures: dict[str, Any],
) -> None:
    client = long_lease(server)
    rng = random.Random(6)
    acked = put_jobs(client, 6, lambda n: {"ms": 3000}, priority=10)
    acked += put_jobs(client, 600, lambda n: {"ms": rng.uniform(5, 30)})
    team = [fleets(server.url, 1, "q", *FAST, clock_offset=offset)
            for offset in (SKEW, 0, -SKEW)]
    stop, seen = threading.Event(), []  # type: ignore[var-annotated]
    sampler = threading.Thread(target=closest_to_expiry, args=(client, stop, seen))
    sampler.start()
    try:
        wait_for(lambda: completed(client) >= len(acked), 60, what="the drain")
    finally:
        stop.set()
        sampler.join()
    results = [outcome(client, [], fleet) for fleet in team]
    entries = [e for fleet in team for e in ledger.read(fleet.ledger_dir)]
    starts = ledger.starts(entries)
    aborted = [e for e in entries if e.event == "abort"]
    timed_out = sum(1 for jid in acked if "timed-out" in
                    [h.what for h in client.get_job(jid).history])  # type: ignore[union-attr]
    by_worker = {offset: sum(1 for e in ledger.read(f.ledger_dir) if e.event == "start")
                 for offset, f in zip((SKEW, 0, -SKEW), team, strict=True)}
    final = outcome(client, acked, team[0])
    figures.update(jobs=len(acked), lost=len(final.lost),
                   duplicates=sum(len(r) for r in starts.values()) - len(starts),
                   timed_out=timed_out, aborted=len(aborted),
                   jobs_by_offset=by_worker, closest_to_expiry=round(min(seen), 1))
    assert final.lost == []
    assert timed_out == 0 and aborted == []
    assert all(len(runs) == 1 for runs in starts.values())
    assert all(count > 0 for count in by_worker.values())
    # Renewed every second, a lock is at least lease - 2 x skew - cadence from expiry.
    assert min(seen) >= LEASE - 2 * SKEW - 2
    assert all(r.audit.clean for r in results)


def test_skew_beyond_the_budget_takes_a_renewed_lock(
    server: RedisServer, fleets: Fleets, figures: dict[str, Any],
) -> None:
    client = long_lease(server)
    (jid,) = put_jobs(client, 1, lambda n: {"ms": 8000})
    owner = fleets(server.url, 1, "q", *FAST, clock_offset=-SKEW)
    wait_for(lambda: ledger.starts(ledger.read(owner.ledger_dir)).get(jid), 20,
             what="the owner's start")
    thief = skewed(server, LEASE, "thief")  # 150 s ahead of the owner: more than a lease
    taken: list[str] = []
    deadline = time.monotonic() + 5
    while not taken and time.monotonic() < deadline:
        taken = [job.jid for job in thief.queue("q").pop()]
        time.sleep(0.1)
    aborted = wait_for(lambda: [e for e in ledger.read(owner.ledger_dir) if e.event == "abort"],
                       5, what="the owner's abort")
    figures.update(jobs=1, thief_offset=LEASE - (-SKEW), stolen=len(taken),
                   owner_aborted=len(aborted))
    assert taken == [jid]
    job = client.get_job(jid)
    assert job is not None and job.worker == "thief"
    assert "timed-out" in [h.what for h in job.history]


@pytest.mark.parametrize(("lease", "offset", "refused"), [
    (LEASE, 90, True), (LEASE, -90, True), (LEASE, 35, True), (LEASE, 25, False),
    (3, 1.0, True), (3, 0, False),
])
def test_a_worker_beyond_the_skew_budget_refuses_to_start(
    lease: int, offset: float, refused: bool, server: RedisServer, fleets: Fleets,
    figures: dict[str, Any],
) -> None:
    client = qless_client(server)
    client.config.put("heartbeat", lease)
    fleet = fleets(server.url, 1, "q", *FAST, clock_offset=offset, restart=False)
    pid = fleet.pids()[0]
    if refused:
        code = fleet.wait_exit(pid, 20)
        output = fleet.output(pid)
        assert code != 0
        assert "clock skew" in output and f"{lease / 4:.1f} s allowed" in output
        assert client.redis.zcard("ql:workers") == 0
    else:
        wait_for(lambda: dict(client.redis.pubsub_numsub("ql:log")).get(b"ql:log", 0) >= 1,
                 20, what="the worker idling")
        code = None
        assert fleet.live_pids() == [pid]
    figures.update(lease=lease, offset=offset, budget=lease / 4, exit_code=code)
