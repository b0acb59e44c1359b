"""Partition: a worker cut off from Redis stops its job before another worker can take it.

Worker pairs: one worker behind a fault proxy (partitioned), one connected directly;
queue lease 3 s, grace period 1 s, each job runs 8 s and writes `start`, a `tick` every
0.1 s and `end` (or `abort`) to the file ledger, outside the Redis under test. A round:
the direct workers are frozen (SIGSTOP), `PAIRS` jobs are put and the partitioned workers
start one each, then the proxy drops everything, drops only Redis' replies, or delays
them by twice the lease, and the direct workers go on (SIGCONT). Once each job has been
started by a direct worker (it took it after the lock expired), the proxy heals and every
job must complete. The partitioned worker's run must be over before the direct one
starts: it fences itself (interrupted in-process, its child killed with `--isolation
process`) and neither completes nor fails the job.

Pass, in-process and isolated: `TRIALS` trials per fault mode (`PAIRS` at once), 0
concurrent double runs (two executions of one job overlapping in time: an execution
lasts from its start to its end or abort, or to a tick after its last one), 0 jobs lost.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from django_qless.core import Client
from tests.faults import ledger
from tests.faults.app.qless_jobs import TICK
from tests.faults.checks import (
    HEARTBEAT,
    audited,
    compressed_time,
    pid_of,
    put_jobs,
    qless_client,
    unfinished,
)
from tests.faults.fleet import FAST, Fleet
from tests.faults.proxy import CLIENT_OPTIONS, FaultProxy
from tests.redis_harness import RedisServer
from tests.support import wait_for

pytestmark = [pytest.mark.faults, pytest.mark.slow, pytest.mark.timeout(900)]

#: Worker pairs, so trials run this many at once.
PAIRS = 10
#: Trials per fault mode: PAIRS jobs per round.
TRIALS = 20
JOB_SECONDS = 8
#: Each job may be leased unseen by a partitioned worker whose pop reached Redis but
#: whose answer did not; each such lease that runs out spends a retry.
RETRIES = 10
FAULTS = ("drop everything", "drop replies", "delay replies")


@dataclass
class Run:
    """One execution of a job: where and from when to when."""

    jid: str
    pid: int
    worker: int
    begin: float
    end: float
    how: str


def runs(entries: list[ledger.Entry]) -> list[Run]:
    """The executions in the ledger; one stopped without a word ended within a tick."""
    found: list[Run] = []
    open_runs: dict[tuple[str, int], Run] = {}
    for entry in entries:
        key = (entry.jid, entry.pid)
        if entry.event == "start":
            open_runs[key] = run = Run(entry.jid, entry.pid, pid_of(entry.worker), entry.t,
                                       entry.t + TICK, "killed")
            found.append(run)
        elif key in open_runs:
            run = open_runs[key]
            if entry.event == "tick":
                run.end = entry.t + TICK
            else:
                run.end, run.how = entry.t, entry.event
                del open_runs[key]
    return found


def double_runs(every: list[Run]) -> list[str]:
    """Jobs two of whose executions overlapped in time."""
    by_jid: dict[str, list[Run]] = {}
    for run in every:
        by_jid.setdefault(run.jid, []).append(run)
    found = []
    for jid, executions in by_jid.items():
        executions.sort(key=lambda run: run.begin)
        latest = executions[0]
        for run in executions[1:]:
            if run.begin < latest.end:
                found.append(f"{jid}: {run.how} run in {run.pid} from {run.begin:.2f} began "
                             f"before the {latest.how} one in {latest.pid} ended "
                             f"({latest.end:.2f})")
            if run.end > latest.end:
                latest = run
    return found


def closest_takeover(every: list[Run]) -> float:
    """The shortest time between the end of one execution of a job and the next one's start."""
    by_jid: dict[str, list[Run]] = {}
    for run in every:
        by_jid.setdefault(run.jid, []).append(run)
    gaps = [later.begin - earlier.end for executions in by_jid.values()
            for earlier, later in zip(sorted(executions, key=lambda run: run.begin),
                                      sorted(executions, key=lambda run: run.begin)[1:],
                                      strict=False)]
    return round(min(gaps), 2)


def started_by(client: Client, fleet: Fleet, jids: list[str]) -> set[str]:
    """The jobs among `jids` started by a worker of `fleet` (by its worker name's pid)."""
    pids = set(fleet.pids())
    return {entry.jid for entry in ledger.read(fleet.ledger_dir)
            if entry.event == "start" and entry.jid in jids and pid_of(entry.worker) in pids}


def listening(client: Client) -> int:
    """How many connections listen for puts (each idle worker has one)."""
    return int(dict(client.redis.pubsub_numsub("ql:log")).get(b"ql:log", 0))


def one_round(client: Client, proxy: FaultProxy, fault: Callable[[], None],
              partitioned: Fleet, direct: Fleet) -> list[str]:
    """PAIRS trials at once: started behind the proxy, cut off, taken over directly."""
    for pid in direct.live_pids():
        direct.send(pid, signal.SIGSTOP)
    jids = put_jobs(client, PAIRS, lambda n: {"seconds": JOB_SECONDS}, klass="faults.ticking",
                    retries=RETRIES)
    wait_for(lambda: len(started_by(client, partitioned, jids)) == PAIRS, 90, every=0.05,
             what="every job started by a partitioned worker")
    fault()
    for pid in direct.live_pids():
        direct.send(pid, signal.SIGCONT)
    wait_for(lambda: len(started_by(client, direct, jids)) == PAIRS, 60,
             what="every job taken over by a direct worker")
    proxy.heal()
    wait_for(lambda: unfinished(client, jids) == 0, 60, what="every job to complete")
    return jids


@pytest.mark.parametrize("isolation", ["in-process", "isolated"])
def test_a_partitioned_worker_fences_its_job_before_another_worker_takes_it(
    isolation: str, proxy: FaultProxy, server: RedisServer, fleets: Callable[..., Fleet],
    figures: dict[str, Any],
) -> None:
    client = qless_client(server)
    compressed_time(client)
    extra = ("--isolation", "process") if isolation == "isolated" else ()
    partitioned = fleets(proxy.url, PAIRS, "q", *FAST, *extra,
                         env={"QLESS_FAULTS_OPTIONS": json.dumps(CLIENT_OPTIONS)})
    direct = fleets(server.url, PAIRS, "q", *FAST, *extra)
    # Every worker started up and idle (listening for puts): a direct worker frozen while
    # starting up would take its first job late, when the trial is over.
    wait_for(lambda: listening(client) >= 2 * PAIRS, 180, what="every worker to start")
    faults: dict[str, Callable[[], None]] = {
        "drop everything": proxy.blackhole,
        "drop replies": lambda: proxy.blackhole(replies_only=True),
        "delay replies": lambda: proxy.delay_replies(2 * HEARTBEAT),
    }
    trials: dict[str, list[str]] = {name: [] for name in FAULTS}
    started = time.monotonic()
    for name in FAULTS:
        while len(trials[name]) < TRIALS:
            trials[name] += one_round(client, proxy, faults[name], partitioned, direct)
    every = runs(sorted(ledger.read(partitioned.ledger_dir) + ledger.read(direct.ledger_dir),
                        key=lambda entry: entry.t))
    doubles = double_runs(every)
    report = audited(client)
    lost = {name: unfinished(client, jids) for name, jids in trials.items()}
    logs = partitioned.output()
    partitioned_pids = set(partitioned.pids())
    finished_cut_off = [run for run in every
                        if run.worker in partitioned_pids and run.how == "end"]
    for name in FAULTS:
        jids = set(trials[name])
        figures[name] = {"trials": len(jids), "double_runs": len({d.split(":")[0] for d in doubles
                                                                   if d.split(":")[0] in jids}),
                         "lost": lost[name]}
    figures.update(isolation=isolation, executions=len(every),
                   fenced_logged=logs.count("fenced: its lease could not be renewed"),
                   cut_off_runs_that_finished=len(finished_cut_off),
                   closest_takeover=closest_takeover(every),
                   rounds_seconds=round(time.monotonic() - started))
    assert doubles == [], "\n".join(doubles[:10])
    assert sum(lost.values()) == 0
    assert finished_cut_off == []
    assert figures["fenced_logged"] >= len(FAULTS) * TRIALS
    assert partitioned.restarts == direct.restarts == 0
    assert "Traceback" not in logs + direct.output()
    assert report.states["failed"] == 0
    assert report.clean, report.summary()

