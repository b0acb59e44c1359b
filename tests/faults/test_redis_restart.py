"""C1/C2: redis-server (appendonly yes; appendfsync always or everysec) SIGKILLed under load.

Four producer threads put jobs (two with redis-py's default retries, two with none) while
two workers drain. The server is SIGKILLed, then started again on the same port and
directory. Pass: every acknowledged put is there and completes (0 lost); every put that
was not acknowledged raised a connection error (never a silent success), and at most one
per producer was applied anyway; the workers reconnect without a process restart and the
script, gone with the old process, is loaded again on its own. The control run without
an AOF loses most acknowledged puts: the test sees a loss when there is one.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from django_qless.core import Client
from django_qless.core.presence import listed
from tests.faults import ledger
from tests.faults.checks import compressed_time, outcome, qless_client, settle, unfinished
from tests.faults.fleet import FAST, Fleet
from tests.redis_harness import RedisServer

pytestmark = [pytest.mark.faults, pytest.mark.timeout(120)]

PRODUCERS = 4
WORKERS = 2
PUT_EVERY = 0.02
KILL_AT = 2.5
DOWN_FOR = 2.0
PRODUCE_FOR = 7.0
RECONNECT_WITHIN = 5.0


@dataclass
class Producer:
    """One producer thread: jids are made before the put, recorded once it returns."""

    name: str
    client: Client
    acked: list[str] = field(default_factory=list)
    #: (sent, acknowledged) wall-clock times of each acknowledged put.
    acked_at: list[tuple[float, float]] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)

    def run(self, until: float) -> None:
        """Put jobs until the deadline."""
        rng = random.Random(self.name)
        n = 0
        while time.monotonic() < until:
            n += 1
            jid = f"{self.name}-{n}"
            sent = time.time()
            try:
                self.client.queue("q").put(
                    "faults.work", {"args": [], "kwargs": {"ms": rng.uniform(1, 10)}}, jid=jid)
            except (redis.ConnectionError, redis.TimeoutError) as exc:
                self.refused.append((jid, type(exc).__name__))
            except Exception as exc:  # noqa: BLE001 - any other outcome is a finding
                self.unexpected.append(f"{jid}: {exc!r}")
            else:
                self.acked.append(jid)
                self.acked_at.append((sent, time.time()))
            time.sleep(PUT_EVERY)


def producers(server: RedisServer) -> list[Producer]:
    """Two producers with redis-py's default retries, two that never retry."""
    made = []
    for n in range(PRODUCERS):
        options: dict[str, Any] = {} if n % 2 == 0 else {"retry": Retry(NoBackoff(), 0)}
        made.append(Producer(f"p{n}", Client(redis.Redis.from_url(server.url, **options))))
    return made


@dataclass
class Run:
    """What one kill-and-restart run left behind."""

    fleet: Fleet
    client: Client
    team: list[Producer]
    worker_pids: list[int]
    killed: float
    restarted: float

    @property
    def acked(self) -> list[str]:
        """jids whose put returned."""
        return [jid for p in self.team for jid in p.acked]

    @property
    def refused(self) -> list[str]:
        """jids whose put raised."""
        return [jid for p in self.team for jid, _ in p.refused]


def kill_and_restart(server: RedisServer, fleets: Callable[..., Fleet]) -> Run:
    """Load the server, SIGKILL it, start it again on the same port and directory."""
    client = qless_client(server)
    compressed_time(client)
    fleet = fleets(server.url, WORKERS, "q", *FAST)
    worker_pids = sorted(fleet.pids())
    # Every worker past its start-up (it has published its presence) before the load and
    # the kill: a worker still starting when Redis goes away (a slow, busy machine) exits,
    # as a worker that cannot reach Redis at its start does, and is not what is tested.
    assert settle(lambda: set(worker_pids) <= presence_pids(client), 60), fleet.output()
    started = time.monotonic()
    team = producers(server)
    threads = [threading.Thread(target=p.run, args=(started + PRODUCE_FOR,)) for p in team]
    for thread in threads:
        thread.start()
    time.sleep(KILL_AT)
    assert server.process is not None
    killed = time.time()
    server.process.kill()
    server.process.wait(10)
    time.sleep(DOWN_FOR)
    server.start()  # same port, same directory: the AOF (if any) is replayed
    restarted = time.time()
    for thread in threads:
        thread.join(30)
    return Run(fleet, qless_client(server), team, worker_pids, killed, restarted)


def presence_pids(client: Client) -> set[int]:
    """Pids of the workers whose presence is published."""
    return {entry.presence.pid for entry in listed(client) if entry.presence is not None}


def died(fleet: Fleet) -> str:
    """Which workers exited, with their exit codes and the end of their logs."""
    lines = [f"exited: {pid} with {code}" for pid, code in fleet.exit_codes.items()]
    return "\n".join(lines) + "\n" + fleet.output()[-4000:]


@pytest.mark.parametrize("fsync", ["always", "everysec"])
def test_redis_sigkill_with_aof_loses_no_acknowledged_put(
    fsync: str, start_redis: Callable[..., RedisServer], fleets: Callable[..., Fleet],
    figures: dict[str, Any],
) -> None:
    # everysec loses nothing on a *process* kill (the kernel has the data); only a machine
    # crash can take its last second. always also survives that.
    run = kill_and_restart(start_redis("--appendonly", "yes", "--appendfsync", fsync), fleets)
    client, fleet, acked, refused = run.client, run.fleet, run.acked, run.refused
    settle(lambda: unfinished(client, acked) == 0, 60)
    result = outcome(client, acked, fleet)
    applied_unacked = [jid for jid in refused if jid in result.audit.found]
    reconnect = _reconnect_after(fleet, run.restarted)
    loads = client.redis.info("commandstats").get("cmdstat_script|load", {}).get("calls", 0)
    figures.update(result.figures(), acked=len(acked), refused=len(refused),
                   applied_unacked=len(applied_unacked), redis_kills=1,
                   reconnect_after=max(reconnect.values(), default=None),
                   script_loads_after_restart=loads)
    assert sum(len(p.unexpected) for p in run.team) == 0, [p.unexpected for p in run.team]
    assert refused, "no put met the outage: the fault missed the load"
    assert result.lost == []
    assert len(applied_unacked) <= PRODUCERS
    assert sorted(fleet.pids()) == run.worker_pids and fleet.restarts == 0, died(fleet)
    assert set(reconnect) == set(run.worker_pids), "a worker never ran a job after the restart"
    assert max(reconnect.values()) <= RECONNECT_WITHIN
    assert loads >= 1  # the script cache died with the process; clients loaded it again
    # A report lost with the connection is logged (the lock expires, the job runs again);
    # what must never show is the loop's catch-all for bugs.
    assert "unexpected error" not in fleet.output()
    assert result.duplicates <= WORKERS + PRODUCERS
    assert result.running == 0
    assert result.audit.clean, result.audit.summary()


def test_without_aof_a_restart_loses_acknowledged_puts(
    start_redis: Callable[..., RedisServer], fleets: Callable[..., Fleet],
    figures: dict[str, Any],
) -> None:
    # The control: the same run on RDB-only persistence (no snapshot was due) shows that
    # the test sees lost puts when there are some.
    run = kill_and_restart(start_redis("--appendonly", "no"), fleets)
    settle(lambda: unfinished(run.client, run.acked) == 0, 3)
    result = outcome(run.client, run.acked, run.fleet)
    times = [(jid, sent, acked) for p in run.team
             for jid, (sent, acked) in zip(p.acked, p.acked_at, strict=True)]
    before_kill = {jid for jid, _, acked in times if acked < run.killed}
    # Sent before the kill, answered after it: applied before the kill, or retried after it.
    straddling = {jid for jid, sent, acked in times if sent < run.killed <= acked}
    figures.update(result.figures(), acked=len(run.acked), acked_before_kill=len(before_kill),
                   persistence="rdb-only")
    # Everything acknowledged before the kill is gone; what came after the restart is there.
    assert before_kill and before_kill <= set(result.lost) <= before_kill | straddling
    assert result.audit.clean, result.audit.summary()


def _reconnect_after(fleet: Fleet, restarted: float) -> dict[int, float]:
    """Per worker pid: seconds from the restart to its first job start after it."""
    first: dict[int, float] = {}
    for entry in ledger.read(fleet.ledger_dir):
        if entry.event == "start" and entry.t >= restarted and entry.pid not in first:
            first[entry.pid] = round(entry.t - restarted, 2)
    return first
