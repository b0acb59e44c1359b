"""The figures every fault test checks: lost, duplicates, overlaps, running, audit."""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

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
        overlaps=overlaps(entries, fleet.deaths),
        running=report.states["running"],
        failed_retries=sum(1 for state, _, _, group in report.found.values()
                           if state == "failed" and group.startswith("failed-retries-")),
        audit=report,
    )


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
