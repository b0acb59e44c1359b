"""B2 in a serial worker: a job kills the process running it (like the OOM killer would).

With `--processes N`, the worker's own supervisor must replace a child killed by a
signal, even one that dies right after it started (a job popped at once can do that),
and qless hands the job out again after its lease. Nothing is lost, one duplicate per kill;
at `--concurrency N`, only the jobs in flight in the killed process run again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.faults import ledger
from tests.faults.checks import (
    DRAIN_DEADLINE,
    Cut,
    completed,
    compressed_time,
    outcome,
    put_jobs,
    qless_client,
    rerun_problems,
    self_kills,
)
from tests.faults.fleet import FAST, Fleet
from tests.redis_harness import RedisServer
from tests.support import wait_for

pytestmark = [pytest.mark.faults, pytest.mark.timeout(90)]


JOBS = 60
KILLERS = (0, 1, 25, 40)


def test_supervised_workers_survive_jobs_that_kill_their_process(
    server: RedisServer, fleets: Callable[..., Fleet], figures: dict[str, Any],
    concurrency: int,
) -> None:
    client = qless_client(server)
    compressed_time(client)
    acked = put_jobs(client, JOBS, lambda n: {"ms": 20, "kill": n in KILLERS})
    fleet = fleets(server.url, 1, "q", *FAST, "--processes", "2", restart=False)
    # Each kill: lease + grace before the job is handed out again, plus a restart.
    wait_for(lambda: completed(client) >= JOBS or not fleet.live_pids(),
             len(KILLERS) * (DRAIN_DEADLINE + 1.5) + 10, what="the drain")
    result = outcome(client, acked, fleet)
    entries = ledger.read(fleet.ledger_dir)
    kills = self_kills(entries)
    # What a killed process had in flight: at most every job it started.
    started = {pid: frozenset(entry.jid for entry in entries
                              if entry.pid == pid and entry.event == "start") for pid in kills}
    reruns = rerun_problems(entries, [Cut(pid, started[pid]) for pid in kills], concurrency)
    supervisor_alive = bool(fleet.live_pids())
    figures.update(result.figures(), job_kills=len(kills), supervisor_alive=supervisor_alive)
    assert supervisor_alive, fleet.output()
    assert result.lost == []
    # Each killer kills the process of its first run; with several jobs at once per
    # process, a killer popped beside another one may die with it first (and its next
    # run, not its first, does not kill).
    assert len(kills) == len(KILLERS) if concurrency == 1 else len(kills) >= 1
    assert reruns == [], "\n".join(reruns[:10])
    assert len(kills) <= result.duplicates <= len(kills) * concurrency
    assert result.overlaps == []
    assert result.audit.clean, result.audit.summary()
