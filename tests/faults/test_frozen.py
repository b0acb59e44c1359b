"""B4: a worker frozen (SIGSTOP) past its lease while 4 workers drain; then SIGCONT.

The frozen worker's job is handed to another worker within lease + grace + a poll; on
resume the frozen worker finds its lock gone, discards the job's result (no second
`done`), and goes on working. Nothing is lost; only the jobs the frozen worker had in
flight run again (at most one per slot: one at `--concurrency 1`), and only those
overlap a run of their own.
"""

from __future__ import annotations

import random
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.faults import ledger
from tests.faults.checks import (
    GRACE,
    HEARTBEAT,
    POLL,
    completed,
    compressed_time,
    cut,
    outcome,
    put_jobs,
    qless_client,
    rerun_problems,
)
from tests.faults.fleet import FAST, Fleet
from tests.redis_harness import RedisServer
from tests.support import wait_for

pytestmark = [pytest.mark.faults, pytest.mark.timeout(120)]

WORKERS = 4
SHORT = 800
LONG = 4
FREEZE = 2 * HEARTBEAT


def running_long(fleet: Fleet, long_jids: set[str]) -> ledger.Entry | None:
    """A long job's first execution that has started and not ended yet."""
    entries = ledger.read(fleet.ledger_dir)
    ended = {(e.jid, e.pid) for e in entries if e.event == "end"}
    for entry in entries:
        key = (entry.jid, entry.pid)
        if entry.event == "start" and entry.jid in long_jids and key not in ended:
            return entry
    return None


def stopped(pid: int) -> bool:
    """True once the process is stopped (state T in /proc): it sends nothing more."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rpartition(")")[2].split()[0] == "T"


def test_frozen_worker_job_is_handed_over_and_its_result_discarded(
    server: RedisServer, fleets: Callable[..., Fleet], figures: dict[str, Any],
    concurrency: int,
) -> None:
    client = qless_client(server)
    compressed_time(client)
    rng = random.Random(4)
    long_jids = put_jobs(client, LONG, lambda n: {"seconds": 2.5}, klass="faults.long_once",
                         priority=10)
    acked = long_jids + put_jobs(client, SHORT, lambda n: {"ms": rng.uniform(5, 50)})
    fleet = fleets(server.url, WORKERS, "q", *FAST)
    victim = wait_for(lambda: running_long(fleet, set(long_jids)), 20, every=0.02,
                      what="a long job running")
    frozen_at = fleet.send(victim.pid, signal.SIGSTOP)
    frozen_wall = time.time()
    wait_for(lambda: stopped(victim.pid), 2, every=0.01, what="the worker to stop")
    frozen = cut(client, victim.pid)
    # The lease left by the frozen worker's last renewal.
    expires = float(client.get_job(victim.jid).expires)  # type: ignore[union-attr]
    taken_over = wait_for(
        lambda: [e for e in ledger.read(fleet.ledger_dir)
                 if e.jid == victim.jid and e.event == "start" and e.pid != victim.pid],
        FREEZE, every=0.02, what="another worker taking the frozen job",
    )[0]
    time.sleep(max(frozen_at + FREEZE - time.monotonic(), 0))
    fleet.send(victim.pid, signal.SIGCONT)
    resumed_wall = time.time()
    wait_for(lambda: "result discarded" in fleet.output(victim.pid), 10,
             what="the frozen worker discarding its result")
    wait_for(lambda: completed(client) >= len(acked), 30, what="the drain")
    # Still working after the resume: it runs more jobs (more than the others' slots).
    more = put_jobs(client, 40 * concurrency, lambda n: {"ms": 20})
    wait_for(lambda: completed(client) >= len(acked) + len(more), 20, what="the extra jobs")
    after = [e for e in ledger.read(fleet.ledger_dir)
             if e.pid == victim.pid and e.event == "start" and e.t > resumed_wall]
    result = outcome(client, acked + more, fleet)
    reruns = rerun_problems(ledger.read(fleet.ledger_dir), [frozen], concurrency)
    job = client.get_job(victim.jid)
    assert job is not None
    history = [entry.what for entry in job.history]
    handover = taken_over.t - frozen_wall
    figures.update(result.figures(), freezes=1, handover_after=round(handover, 2),
                   in_flight_when_frozen=len(frozen.held),
                   frozen_jobs_after_resume=len(after))
    # Counted from the last renewal: lease + grace + one poll (and some scheduling).
    assert taken_over.t - (expires - HEARTBEAT) <= HEARTBEAT + GRACE + POLL + 0.3
    assert history.count("done") == 1 and job.state == "complete"
    assert "timed-out" in history
    assert after, "the frozen worker ran nothing after its resume"
    assert fleet.restarts == 0
    assert "Traceback" not in fleet.output(victim.pid)
    assert result.lost == []
    assert reruns == [], "\n".join(reruns[:10])
    assert result.duplicates <= concurrency
    # The overlaps allowed: the frozen process was alive (stopped) while its jobs ran again.
    assert {line.split(":")[0] for line in result.overlaps} <= frozen.held
    assert result.running == 0
    assert result.audit.clean, result.audit.summary()
