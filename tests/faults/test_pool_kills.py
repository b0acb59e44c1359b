"""SIGKILL chaos at `--concurrency 50`: nothing is lost, only the jobs in flight run again.

Two workers of 50 slots drain 3,000 short jobs, plain functions (on the slot threads)
and `async def` jobs (on the process's event loop) in turns, each sleeping 5-500 ms. Every
1.5 s one of them is SIGKILLed mid-drain and restarted. At each kill the test notes the
jobs Redis still shows the dead worker holding: those running or finished but not yet
reported at that instant, and the one popped ahead (`checks.Cut`). Pass: every job
completes, none lost or failed for exhausted retries; every execution that was followed
by another was in flight in a killed worker, at most one per slot (50) per kill; no two
executions of a job overlapped; nothing left running; audit clean.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from tests.faults import ledger
from tests.faults.checks import (
    DRAIN_DEADLINE,
    completed,
    compressed_time,
    kill_while_waiting,
    most_held,
    outcome,
    put_jobs,
    qless_client,
    rerun_problems,
    settle,
)
from tests.faults.fleet import FAST, Fleet
from tests.redis_harness import RedisServer

pytestmark = [pytest.mark.faults, pytest.mark.timeout(240)]

CONCURRENCY = 50
WORKERS = 2
#: Per kind: plain functions and `async def` jobs.
JOBS = 1500
KILL_EVERY = 1.5
#: A job may be in flight at several kills in a row (each costs one retry).
RETRIES = 10
#: Slack for a restarted worker's start-up (Python + Django) on a loaded 2-core box.
START_SLACK = 3.0


def test_sigkill_chaos_at_concurrency_50_reruns_at_most_the_jobs_in_flight(
    server: RedisServer, fleets: Callable[..., Fleet], figures: dict[str, Any],
) -> None:
    client = qless_client(server)
    compressed_time(client)
    rng = random.Random(50)
    # The two kinds in turns, so every worker runs both at once.
    acked = [jid for n in range(2 * JOBS)
             for jid in put_jobs(client, 1, lambda _: {"ms": rng.uniform(5, 500)},
                                 klass=("faults.work", "faults.awork")[n % 2], retries=RETRIES)]
    fleet = fleets(server.url, WORKERS, "q", *FAST, "--concurrency", str(CONCURRENCY))
    kills = kill_while_waiting(client, fleet, rng, KILL_EVERY)
    drained = settle(lambda: completed(client) >= len(acked), DRAIN_DEADLINE + START_SLACK)
    result = outcome(client, acked, fleet)
    entries = ledger.read(fleet.ledger_dir)
    reruns = rerun_problems(entries, kills, CONCURRENCY)
    rerun_kinds = Counter(jid.split("-", 1)[0] for jid, runs in ledger.starts(entries).items()
                          if len(runs) > 1)
    in_flight = [len(kill.held) for kill in kills]
    figures.update(result.figures(), kills=len(kills), restarts=fleet.restarts,
                   in_flight_at_kills=sum(in_flight), most_in_flight=max(in_flight, default=0),
                   rerun_kinds=dict(rerun_kinds))
    assert sum(1 for held in in_flight if held) >= 5, "too few kills landed mid-drain"
    assert drained, "not drained after the last kill"
    assert result.lost == []
    assert reruns == [], "\n".join(reruns[:10])
    assert result.duplicates <= sum(in_flight)
    assert max(in_flight) <= most_held(CONCURRENCY)  # its slots' jobs and those held ahead
    assert result.overlaps == []
    assert result.running == 0
    assert result.failed_retries == 0
    assert result.audit.clean, result.audit.summary()
    assert fleet.restarts >= len(kills)
