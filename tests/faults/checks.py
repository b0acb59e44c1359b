"""The figures every fault test checks: lost, duplicates, overlaps, running, audit."""

from __future__ import annotations

import math
import random
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import pytest
import redis

from django_qless.core import Client
from tests.faults import ledger
from tests.faults.audit import Audit, audit
from tests.faults.fleet import Fleet
from tests.redis_harness import RedisServer

#: Compressed time: queue lease 3 s, grace period 1 s (worker cadence 1 s, poll 0.2 s).
HEARTBEAT = 3
GRACE = 1
POLL = 0.2
#: Longest wait for a job whose worker vanished: lease + grace + 3 polls (plan §4.0).
DRAIN_DEADLINE = HEARTBEAT + GRACE + 3 * POLL
#: The concurrencies the key fault modules run at in every run of the suite (their
#: `pytestmark`): the serial worker, and 16 slots per process.
CONCURRENCIES = (1, 16)
AT_EACH_CONCURRENCY = pytest.mark.parametrize("concurrency", CONCURRENCIES,
                                              ids=lambda n: f"concurrency{n}")
#: Jobs a worker pops ahead of its busy slots (`--prefetch`, default 1).
PREFETCH = 1


def most_held(concurrency: int) -> int:
    """The most jobs one worker leases at once: one running in each of its slots, and
    those popped ahead of them."""
    return concurrency + PREFETCH


@dataclass
class Outcome:
    """What happened to the acknowledged jobs."""

    jobs: int
    lost: list[str]
    executions: int
    duplicates: int
    overlaps: list[str]
    running: int
    failed_retries: int
    audit: Audit

    def figures(self) -> dict[str, object]:
        """The figures printed for the test."""
        return {"jobs": self.jobs, "lost": len(self.lost), "executions": self.executions,
                "duplicates": self.duplicates, "overlaps": len(self.overlaps),
                "running": self.running, "audit": "clean" if self.audit.clean else "DIRTY"}


def outcome(client: Client, acked: Iterable[str], fleet: Fleet) -> Outcome:
    """Audit, then compare the acknowledged jids with Redis and the ledger.

    lost = acked jid that is neither `complete` nor `failed` into a recorded group;
    duplicates = executions (ledger starts) - distinct jids started.
    """
    report = audited(client, fleet)
    acked = list(acked)
    lost = [jid for jid in acked if not _ended(report, jid)]
    entries = ledger.read(fleet.ledger_dir)
    starts = ledger.starts(entries)
    executions = sum(len(runs) for runs in starts.values())
    return Outcome(
        jobs=len(acked),
        lost=lost,
        executions=executions,
        duplicates=executions - len(starts),
        overlaps=overlaps(entries, {**self_kills(entries), **fleet.deaths}),
        running=report.states["running"],
        failed_retries=sum(1 for state, _, _, group in report.found.values()
                           if state == "failed" and group.startswith("failed-retries-")),
        audit=report,
    )


def self_kills(entries: list[ledger.Entry]) -> dict[int, float]:
    """pid -> when a job of that process killed it (its `killed` line, written just before)."""
    return {entry.pid: entry.t for entry in entries if entry.event == "killed"}


def _ended(report: Audit, jid: str) -> bool:
    """Complete, or failed with a group."""
    state, _, _, group = report.found.get(jid, ("", "", "", ""))
    return state == "complete" or (state == "failed" and bool(group))


def overlaps(entries: list[ledger.Entry], deaths: dict[int, float]) -> list[str]:
    """jids with two executions overlapping in time while both processes were alive.

    An execution lasts from its `start` to its `end` (or `abort`: the worker interrupted
    it; or `killed`: it killed its own process), or to its process's death, or (if none:
    it never stopped) forever.
    """
    spans: dict[str, list[tuple[float, float, int]]] = {}
    open_runs: dict[tuple[str, int], float] = {}
    for entry in entries:
        key = (entry.jid, entry.pid)
        if entry.event == "start":
            open_runs[key] = entry.t
        elif entry.event in ("end", "abort", "killed") and key in open_runs:
            spans.setdefault(entry.jid, []).append((open_runs.pop(key), entry.t, entry.pid))
    for (jid, pid), began in open_runs.items():
        spans.setdefault(jid, []).append((began, deaths.get(pid, math.inf), pid))
    found = []
    for jid, runs in spans.items():
        runs.sort()
        latest_end, latest_pid = runs[0][1], runs[0][2]
        for begin, end, pid in runs[1:]:
            if begin < latest_end:
                found.append(f"{jid}: run in {pid} began before the one in {latest_pid} ended")
            if end > latest_end:
                latest_end, latest_pid = end, pid
    return found


@dataclass(frozen=True)
class Cut:
    """A worker cut off from its jobs (SIGKILLed, or SIGSTOPped past its lease), and the
    jobs Redis showed it holding once it stood still: those running or finished but not
    yet reported at that instant."""

    pid: int
    held: frozenset[str]


def cut(client: Client, pid: int, queues: Iterable[str] = ("q",)) -> Cut:
    """The jobs a worker that was just killed or stopped holds.

    It sends nothing more: a completion it wrote just before is already applied (not
    held) or not (held); its locks outlast this look by up to a lease.
    """
    return Cut(pid, frozenset(held_by(client, pid, queues)))


def kill_random(client: Client, fleet: Fleet, rng: random.Random,
                queues: Iterable[str] = ("q",)) -> Cut:
    """SIGKILL a random live worker; once it is dead, note the jobs it held."""
    pid = fleet.kill_random(rng)
    fleet.wait_dead(pid)
    return cut(client, pid, queues)


def kill_while_waiting(client: Client, fleet: Fleet, rng: random.Random, every: float,
                       queue: str = "q") -> list[Cut]:
    """SIGKILL a random worker every `every` seconds while jobs wait in `queue` (after the
    last, only the jobs the killed workers held are left); each kill's `Cut`."""
    kills = []
    while client.redis.zcard(f"ql:q:{queue}-work") > 0:
        time.sleep(every)
        kills.append(kill_random(client, fleet, rng, (queue,)))
    return kills


def held_by(client: Client, pid: int, queues: Iterable[str] = ("q",)) -> set[str]:
    """jids of the jobs locked by the worker of that pid."""
    jids = [member.decode() if isinstance(member, bytes) else str(member)
            for queue in queues for member in client.redis.zrange(f"ql:q:{queue}-locks", 0, -1)]
    pipe = client.redis.pipeline(transaction=False)
    for jid in jids:
        pipe.hget(f"ql:j:{jid}", "worker")
    return {jid for jid, worker in zip(jids, pipe.execute(), strict=True)
            if worker is not None and pid_of(worker.decode()) == pid}


def rerun_problems(entries: list[ledger.Entry], cuts: Iterable[Cut],
                   concurrency: int) -> list[str]:
    """Every execution followed by another of its job must have been in flight in a worker
    when it was cut off, and no cut may cost more re-runs than the worker's slots.

    Returns the executions (and cuts) that break this, one line each.
    """
    by_pid = {each.pid: each for each in cuts}
    rerun: dict[int, set[str]] = {}
    problems = []
    for jid, runs in ledger.starts(entries).items():
        for run in runs[:-1]:  # each was followed by another execution
            where = by_pid.get(run.pid)
            if where is None:
                problems.append(f"{jid}: ran again after its run in {run.pid} (not cut off)")
            elif jid not in where.held:
                problems.append(f"{jid}: ran again after its run in {run.pid}, though not "
                                "in flight when it was cut off")
            else:
                rerun.setdefault(run.pid, set()).add(jid)
    problems += [f"{pid}: {len(jids)} jobs ran again after it was cut off, more than its "
                 f"{concurrency} slot(s)" for pid, jids in rerun.items()
                 if len(jids) > concurrency]
    return problems


def qless_client(server: RedisServer, **kwargs: Any) -> Client:
    """A qless client (the producer and the test's eyes) on a server."""
    return Client(redis.Redis.from_url(server.url), **kwargs)


def compressed_time(client: Client) -> None:
    """Queue lease 3 s and grace 1 s, so expiry-driven recovery takes seconds."""
    client.config.put("heartbeat", HEARTBEAT)
    client.config.put("grace-period", GRACE)


def pid_of(worker: str) -> int:
    """The pid inside a `host-pid-random` worker name (-1 if it has none)."""
    try:
        return int(worker.rsplit("-", 2)[1])
    except (IndexError, ValueError):
        return -1


def audited(client: Client, fleet: Fleet | None = None) -> Audit:
    """Audit the database; locks must belong to live fleet workers (or none when no fleet)."""
    live = set(fleet.live_pids()) if fleet is not None else set()
    return audit(client.redis, alive=lambda worker: pid_of(worker) in live)


def put_jobs(client: Client, count: int, data: Callable[[int], dict[str, Any]],
             klass: str = "faults.work", queue: str = "q", **options: Any) -> list[str]:
    """Put `count` jobs with client-made jids; returns the jids whose put was acknowledged."""
    acked = []
    for n in range(count):
        jid = f"{klass.rsplit('.', 1)[-1]}-{n}-{uuid.uuid4().hex[:12]}"
        acked.append(client.queue(queue).put(
            klass, {"args": [], "kwargs": data(n)}, jid=jid, **options))
    return acked


def unfinished(client: Client, jids: list[str]) -> int:
    """How many of `jids` are neither complete nor failed (a missing job counts)."""
    pipe = client.redis.pipeline(transaction=False)
    for jid in jids:
        pipe.hget(f"ql:j:{jid}", "state")
    return sum(1 for state in pipe.execute() if state not in (b"complete", b"failed"))


def settle(predicate: Callable[[], Any], timeout: float, every: float = 0.1) -> bool:
    """Poll until `predicate()` is truthy or the time is up; the figures tell what is left."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(every)
    return bool(predicate())


def completed(client: Client) -> int:
    """How many jobs are complete."""
    return int(client.redis.zcard("ql:completed"))


def idle(client: Client) -> bool:
    """True once a worker listens for puts (it does so only when its queues are empty)."""
    return dict(client.redis.pubsub_numsub("ql:log")).get(b"ql:log", 0) >= 1
