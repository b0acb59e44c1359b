"""Redis Sentinel: the primary is SIGKILLed while workers drain and producers put.

One primary, one replica and three sentinels (quorum 2, `down-after-milliseconds` 1000)
run on loopback. Two `manage.py qless_worker` subprocesses and four producer threads (the
Django API: `@qless_job(...).enqueue` on a `redis+sentinel://` URL) work through the
Sentinel-managed service. Once both workers run jobs, the primary is SIGKILLed; the
sentinels promote the replica and the old primary comes back as the new primary's
replica. Pass: the workers and producers reach the new primary on their own (no process
restart, the same cached client), every job on the new primary ends, no job runs twice at
once, and with `REPLICA_ACK` no acknowledged put is lost. Without it, asynchronous
replication may lose the puts acknowledged in the last instant before the kill: that run
reports its loss and asserts only the rest.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import redis

from django_qless.connection import get_client
from django_qless.core import Client, QlessError, ReplicationError
from tests.faults import ledger
from tests.faults.app.qless_jobs import work
from tests.faults.checks import Outcome, compressed_time, outcome, settle, unfinished
from tests.faults.fleet import Fleet
from tests.redis_harness import RedisServer, SentinelGroup, find_redis_sentinel

SENTINEL_BINARY = find_redis_sentinel()
pytestmark = [
    pytest.mark.faults, pytest.mark.timeout(120),
    pytest.mark.skipif(SENTINEL_BINARY is None,
                       reason="redis-sentinel is not installed (apt-get install redis-sentinel)"),
]

PRODUCERS = 4
WORKERS = 2
#: Seconds of load once both workers run jobs, before the kill.
KILL_AFTER = 1.0
#: Seconds of load after the promotion.
PRODUCE_AFTER = 4.0
#: Seconds from the kill within which producers and workers must be back.
RESUME_WITHIN = 6.0
ACK = {"REPLICAS": 1, "TIMEOUT": 0.5}
WORKER_ARGS = ("q", "--poll-interval", "30", "--heartbeat-interval", "1")


@dataclass
class Producer:
    """One producer thread putting through the Django API; a put that raised is not retried."""

    name: str
    #: (jid, wall-clock times the put was sent and returned).
    acked: list[tuple[str, float, float]] = field(default_factory=list)
    #: Written to the primary, but no replica confirmed it (ReplicationError).
    unconfirmed: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    clients: set[int] = field(default_factory=set)

    def run(self, stop: threading.Event) -> None:
        """Put jobs until told to stop."""
        n = 0
        while not stop.is_set():
            n += 1
            jid = f"{self.name}-{n}"
            sent = time.time()
            try:
                work.using(jid=jid, queue="q").enqueue(ms=2)
            except ReplicationError as exc:
                assert exc.jid == jid and jid in str(exc)
                self.unconfirmed.append(jid)
            except (redis.ConnectionError, redis.TimeoutError):
                self.refused.append(jid)
                time.sleep(0.05)
            except QlessError as exc:
                self.unexpected.append(f"{jid}: {exc!r}")
            else:
                self.acked.append((jid, sent, time.time()))
            self.clients.add(id(get_client()))
            time.sleep(0.005)


@dataclass
class Failover:
    """What one kill-and-promote run left behind."""

    fleet: Fleet
    team: list[Producer]
    worker_pids: list[int]
    new_primary: RedisServer
    killed: float
    promoted: float

    @property
    def acked(self) -> list[str]:
        """jids whose put returned."""
        return [jid for p in self.team for jid, _, _ in p.acked]

    def first_put_after_kill(self) -> float | None:
        """Seconds from the kill to the first put sent after it returning (new primary)."""
        times = [at for p in self.team for _, sent, at in p.acked if sent > self.killed]
        return round(min(times) - self.killed, 2) if times else None

    def first_end_on_new_primary(self) -> float | None:
        """Seconds from the kill to the first job ending after the promotion."""
        ends = [entry.t for entry in ledger.read(self.fleet.ledger_dir)
                if entry.event == "end" and entry.t > self.promoted]
        return round(min(ends) - self.killed, 2) if ends else None


@pytest.fixture
def group() -> Iterator[SentinelGroup]:
    """A private primary, replica and three sentinels."""
    assert SENTINEL_BINARY is not None
    started = SentinelGroup()
    try:
        yield started.start(SENTINEL_BINARY)
    finally:
        started.stop()


def fail_over(group: SentinelGroup, fleets: Callable[..., Fleet], settings: Any,
              ack: dict[str, float] | None) -> Failover:
    """Load the service, SIGKILL the primary, wait for the promotion and the end of the load."""
    primary, replica = group.primary, group.replica
    assert primary is not None and primary.process is not None and replica is not None
    compressed_time(Client(primary.client()))
    connection: dict[str, Any] = {"URL": group.url}
    env = {"DJANGO_SETTINGS_MODULE": "tests.faults.sentinel_settings"}
    if ack is not None:
        connection["REPLICA_ACK"] = ack
        env["QLESS_FAULTS_REPLICA_ACK"] = json.dumps(ack)
    settings.QLESS = {"CONNECTIONS": {"default": connection}, "PUT_MEMORY_LIMIT": None}
    # Polling every 30 s: an idle worker wakes on the put's pub/sub event, so jobs flowing
    # within seconds of the promotion show that the listener reconnected too.
    fleet = fleets(group.url, WORKERS, *WORKER_ARGS, env=env)
    worker_pids = sorted(fleet.pids())
    team = [Producer(f"p{n}") for n in range(PRODUCERS)]
    stop = threading.Event()
    threads = [threading.Thread(target=p.run, args=(stop,)) for p in team]
    for thread in threads:
        thread.start()
    # A worker still starting up refuses to start without Redis: kill once both run jobs.
    assert settle(lambda: set(worker_pids) <= _job_runners(fleet), 30), fleet.output()
    time.sleep(KILL_AFTER)
    killed = time.time()
    primary.process.kill()
    primary.process.wait(10)
    promoted = group.wait_for_master(replica.port, 20)
    group.rejoin_as_replica(primary, replica)
    time.sleep(PRODUCE_AFTER)
    stop.set()
    for thread in threads:
        thread.join(30)
    return Failover(fleet, team, worker_pids, replica, killed, promoted)


def _job_runners(fleet: Fleet) -> set[int]:
    """Pids of the workers that have started a job."""
    return {entry.pid for entry in ledger.read(fleet.ledger_dir) if entry.event == "start"}


def drained(run: Failover, figures: dict[str, Any]) -> tuple[Outcome, list[str]]:
    """Drain on the new primary, check what both runs promise; (outcome, acked jids kept)."""
    client = Client(run.new_primary.client())
    kept = [jid for jid in run.acked if client.get_job(jid) is not None]
    settle(lambda: unfinished(client, kept) == 0, 30)
    result = outcome(client, run.acked, run.fleet)
    figures.update(result.figures(), acked=len(run.acked),
                   acked_puts_lost=len(run.acked) - len(kept),
                   refused=sum(len(p.refused) for p in run.team),
                   unconfirmed=sum(len(p.unconfirmed) for p in run.team),
                   promoted_after=round(run.promoted - run.killed, 2),
                   first_put_after=run.first_put_after_kill(),
                   first_end_after=run.first_end_on_new_primary())
    assert [p.unexpected for p in run.team] == [[]] * PRODUCERS
    assert sum(len(p.refused) for p in run.team), "no put met the failover"
    # Resumed without a restart: the same worker processes, the same cached client.
    assert sorted(run.fleet.pids()) == run.worker_pids and run.fleet.restarts == 0, "\n".join(
        line for line in run.fleet.output().splitlines() if "completed in" not in line)
    assert all(len(p.clients) == 1 for p in run.team)
    assert figures["first_put_after"] is not None
    assert figures["first_put_after"] <= RESUME_WITHIN
    assert figures["first_end_after"] is not None
    assert figures["first_end_after"] <= RESUME_WITHIN
    assert [jid for jid in result.lost if jid in kept] == []
    assert result.overlaps == [], result.overlaps
    assert result.running == 0
    assert result.audit.clean, result.audit.summary()
    assert "unexpected error" not in run.fleet.output()
    return result, kept


def test_failover_without_replica_ack_resumes_and_reports_its_loss(
    group: SentinelGroup, fleets: Callable[..., Fleet], settings: Any, figures: dict[str, Any],
) -> None:
    run = fail_over(group, fleets, settings, None)
    drained(run, figures)
    figures["replica_ack"] = "off"
    # Nothing is promised for the puts the replica had not received: the figure is reported.
    assert figures["unconfirmed"] == 0


def test_failover_with_replica_ack_loses_no_acknowledged_put(
    group: SentinelGroup, fleets: Callable[..., Fleet], settings: Any, figures: dict[str, Any],
) -> None:
    run = fail_over(group, fleets, settings, ACK)
    result, kept = drained(run, figures)
    figures["replica_ack"] = "1 replica, 0.5 s"
    assert figures["acked_puts_lost"] == 0
    assert result.lost == []
    # Unconfirmed puts are on the primary of the moment: they ran if that primary survived.
    assert figures["unconfirmed"] >= 0
