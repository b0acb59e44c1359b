"""B1: SIGKILL a random worker every 2 s while 4 workers drain 2,000 jobs; nothing is lost.

At each concurrency in `AT_EACH_CONCURRENCY`: only the jobs a killed worker had in flight
(running, or finished but not yet reported) run again, at most one per slot.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.faults import ledger
from tests.faults.checks import (
    AT_EACH_CONCURRENCY,
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

pytestmark = [pytest.mark.faults, pytest.mark.timeout(180), AT_EACH_CONCURRENCY]

JOBS = 2000
WORKERS = 4
KILL_EVERY = 2.0
#: Slack for a restarted worker's start-up (Python + Django) on a loaded 2-core box.
START_SLACK = 3.0


def test_sigkill_a_worker_every_two_seconds_loses_nothing(
    server: RedisServer, fleets: Callable[..., Fleet], figures: dict[str, Any],
    concurrency: int,
) -> None:
    client = qless_client(server)
    compressed_time(client)
    rng = random.Random(1)
    # N slots drain N times faster: jobs N times longer keep the kills landing mid-drain.
    acked = put_jobs(client, JOBS, lambda n: {"ms": rng.uniform(5, 50) * concurrency},
                     retries=5)
    fleet = fleets(server.url, WORKERS, "q", *FAST)
    kills = kill_while_waiting(client, fleet, rng, KILL_EVERY)
    last_kill = time.monotonic()
    drained = settle(lambda: completed(client) >= JOBS, DRAIN_DEADLINE + START_SLACK)
    drained_after = time.monotonic() - last_kill
    result = outcome(client, acked, fleet)
    reruns = rerun_problems(ledger.read(fleet.ledger_dir), kills, concurrency)
    slowest_restart = max(fleet.restart_latencies, default=0.0)
    figures.update(result.figures(), kills=len(kills), restarts=fleet.restarts,
                   in_flight_at_kills=sum(len(kill.held) for kill in kills),
                   slowest_restart=round(slowest_restart, 2),
                   drained_after_last_kill=round(drained_after, 1))
    assert len(kills) == fleet.kills() >= 5, "the drain was too quick to inject the faults"
    assert drained, f"not drained {drained_after:.1f}s after the last kill"
    assert result.lost == []
    # Re-run: only jobs in flight at a kill, at most one per slot of the killed worker.
    assert reruns == [], "\n".join(reruns[:10])
    assert result.duplicates <= len(kills) * concurrency
    assert all(len(kill.held) <= most_held(concurrency) for kill in kills)
    assert result.overlaps == []
    assert result.running == 0
    assert result.failed_retries == 0
    assert result.audit.clean, result.audit.summary()
    # Every kill was followed by a restart within the supervisor's half second.
    assert fleet.restarts >= len(kills)
    assert slowest_restart <= 0.5
