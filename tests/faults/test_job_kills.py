"""B2 in a serial worker: a job kills the process running it (like the OOM killer would).

With `--processes N`, the worker's own supervisor must replace a child killed by a
signal, even one that dies right after it started (a job popped at once can do that),
and qless hands the job out again after its lease. Nothing is lost, one duplicate per kill.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.faults.checks import (
    DRAIN_DEADLINE,
    completed,
    compressed_time,
    outcome,
    put_jobs,
    qless_client,
)
from tests.faults.fleet import FAST, Fleet
from tests.redis_harness import RedisServer
from tests.support import wait_for

pytestmark = [pytest.mark.faults, pytest.mark.timeout(90)]


JOBS = 60
KILLERS = (0, 1, 25, 40)


def test_supervised_workers_survive_jobs_that_kill_their_process(
    server: RedisServer, fleets: Callable[..., Fleet], figures: dict[str, Any],
) -> None:
    client = qless_client(server)
    compressed_time(client)
    acked = put_jobs(client, JOBS, lambda n: {"ms": 20, "kill": n in KILLERS})
    fleet = fleets(server.url, 1, "q", *FAST, "--processes", "2", restart=False)
    # Each kill: lease + grace before the job is handed out again, plus a restart.
    wait_for(lambda: completed(client) >= JOBS or not fleet.live_pids(),
             len(KILLERS) * (DRAIN_DEADLINE + 1.5) + 10, what="the drain")
    result = outcome(client, acked, fleet)
    supervisor_alive = bool(fleet.live_pids())
    figures.update(result.figures(), job_kills=len(KILLERS), supervisor_alive=supervisor_alive)
    assert supervisor_alive, fleet.output()
    assert result.lost == []
    assert result.duplicates == len(KILLERS)
    assert result.overlaps == []
    assert result.audit.clean, result.audit.summary()
