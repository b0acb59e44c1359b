"""C4/C7: Redis stalls and a script flush while two workers drain 1,000 jobs.

Faults, one after the other: `DEBUG SLEEP 2` (the server blocks), `CLIENT PAUSE 3000 WRITE`
(writes and scripts wait), `SCRIPT FLUSH` with `FUNCTION FLUSH` (the next EVALSHA gets
NOSCRIPT, the next FCALL "Function not found"), and SIGSTOP of
redis-server for longer than the lease, then SIGCONT. Pass: no worker crashes or restarts,
no error reaches a job, 0 lost, at most one duplicate per worker slot per stall (their
clocks kept moving while Redis stood still), audit clean.
"""

from __future__ import annotations

import random
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.faults.checks import (
    HEARTBEAT,
    completed,
    compressed_time,
    outcome,
    put_jobs,
    qless_client,
    settle,
)
from tests.faults.fleet import FAST, Fleet
from tests.redis_harness import RedisServer
from tests.support import wait_for

pytestmark = [pytest.mark.faults, pytest.mark.timeout(120)]

JOBS = 1000
WORKERS = 2
GAP = 1.5


def test_stalls_and_script_flush_under_load_lose_nothing(
    server: RedisServer, fleets: Callable[..., Fleet], figures: dict[str, Any],
    concurrency: int,
) -> None:
    client = qless_client(server)
    compressed_time(client)
    rng = random.Random(5)
    # N slots drain N times faster: jobs N times longer keep the drain going past the faults.
    acked = put_jobs(client, JOBS, lambda n: {"ms": rng.uniform(8, 30) * concurrency})
    fleet = fleets(server.url, WORKERS, "q", *FAST)
    wait_for(lambda: completed(client) >= 50, 20, what="the workers' first jobs")
    admin = server.client()
    faults: list[str] = []

    def stall(name: str, action: Callable[[], object]) -> None:
        faults.append(f"{name}@{completed(client)}")
        action()
        time.sleep(GAP)

    # DEBUG SLEEP blocks the connection that sends it too: send it from a thread.
    sleeper = threading.Thread(target=lambda: server.client().execute_command("DEBUG", "SLEEP", 2))
    stall("debug-sleep", lambda: (sleeper.start(), sleeper.join()))
    stall("client-pause", lambda: admin.execute_command("CLIENT", "PAUSE", 3000, "WRITE"))
    time.sleep(3)
    stall("script-flush", lambda: (admin.script_flush(), admin.function_flush()))
    assert server.process is not None
    stall("sigstop", lambda: (server.process.send_signal(signal.SIGSTOP),  # type: ignore[union-attr]
                              time.sleep(HEARTBEAT + 1),
                              server.process.send_signal(signal.SIGCONT)))  # type: ignore[union-attr]
    left_at_end = JOBS - completed(client)
    settle(lambda: completed(client) >= JOBS, 40)
    result = outcome(client, acked, fleet)
    logs = fleet.output()
    figures.update(result.figures(), stalls=len(faults), faults=" ".join(faults),
                   left_after_faults=left_at_end, restarts=fleet.restarts,
                   redis_errors_logged=logs.count("Redis error"))
    assert left_at_end > 0, "the drain ended before the last fault"
    assert fleet.restarts == 0 and len(fleet.live_pids()) == WORKERS
    assert "unexpected error" not in logs
    assert "NoScript" not in logs
    assert result.lost == []
    assert result.duplicates <= WORKERS * concurrency * len(faults)
    assert result.overlaps == []
    assert result.running == 0
    assert result.audit.clean, result.audit.summary()
