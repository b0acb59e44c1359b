"""C6: Redis at `maxmemory` with `noeviction` while a producer floods 1 KB jobs.

qless.lua has no shebang line, so Redis 7 runs it in compatibility mode: the OOM check is
made at the script's first write, and only if that write is one that may grow memory
(RPUSH, ZADD, HSET...). Such a refusal aborts the script before anything is written; once
a script has written anything, its later writes go through, so it cannot half-apply.
A put is refused whole (`QueueFullError`, a `redis.OutOfMemoryError`). So are pop,
complete and heartbeat (their first writes grow memory), while fail (it starts by removing
the lock) goes through: above the limit the workers cannot drain until memory is freed.
That is why the client refuses puts earlier, at `PUT_MEMORY_LIMIT` (90% of maxmemory by
default; tests/core/test_memory_guard.py): these tests turn that guard off to show what
Redis itself does at the limit.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import redis

from django_qless.connection import get_client, reset_clients
from django_qless.core import Client, QueueFullError
from tests.conftest import snapshot
from tests.faults import ledger
from tests.faults.app import qless_jobs
from tests.faults.audit import audit
from tests.faults.checks import (
    Outcome,
    audited,
    compressed_time,
    outcome,
    qless_client,
    settle,
)
from tests.faults.fleet import FAST, Fleet
from tests.redis_harness import RedisServer

pytestmark = [pytest.mark.faults, pytest.mark.timeout(60)]

MAXMEMORY = 20 * 1024 * 1024
#: Four shared 250-character tags make each job hash ~1 KB; the job itself takes no data.
PADDING = [f"pad{n}-" + "x" * 245 for n in range(4)]
#: Puts tried after the first refusal: every one must be refused too, leaving nothing.
MORE_PUTS = 20
WORKERS = 2
#: The drain test's Redis: small, so ~2,000 jobs fill it and two workers drain them quickly.
DRAIN_MAXMEMORY = 8 * 1024 * 1024
BALLAST = 1024 * 1024
HISTORY_COUNT = 100
RESUMED_PUTS = 500


@dataclass
class Flood:
    """What a flood of puts into a full Redis did."""

    acked: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    errors: list[redis.RedisError] = field(default_factory=list)
    #: Puts acknowledged after the first refusal.
    late: int = 0


@pytest.fixture
def full_server(start_redis: Callable[..., RedisServer]) -> RedisServer:
    """A 20 MB redis-server that refuses writes instead of evicting keys."""
    return start_redis("--maxmemory", str(MAXMEMORY), "--maxmemory-policy", "noeviction")


def flood(client: Client, more: int = MORE_PUTS) -> Flood:
    """Put 1 KB jobs until Redis refuses one, then `more` refusals; record every answer."""
    result = Flood()
    queue = client.queue("q")
    while len(result.refused) <= more:
        jid = f"flood-{len(result.acked)}-{uuid.uuid4().hex[:8]}"
        try:
            queue.put("faults.work", {"args": [], "kwargs": {}}, jid=jid, tags=PADDING)
        except redis.RedisError as exc:
            result.refused.append(jid)
            result.errors.append(exc)
            continue
        # Redis' used memory moves a little on its own (client buffers), so a put after a
        # refusal may still fit: it is a real job like any other acknowledged one.
        result.late += bool(result.refused)
        result.acked.append(jid)
    return result


def left_behind(client: Client, jid: str) -> list[str]:
    """Every trace of a jid: its keys and the queue sets holding it."""
    keys = [key.decode() for key in client.redis.scan_iter(match=f"ql:j:{jid}*")]
    sets = [name for name in ("ql:q:q-work", "ql:q:q-scheduled", "ql:completed")
            if client.redis.zscore(name, jid) is not None]
    return keys + sets


def used_memory(client: Client) -> int:
    """Redis' used_memory, in bytes."""
    return int(client.redis.info("memory")["used_memory"])


@pytest.fixture
def django_qless_on(settings: Any, full_server: RedisServer) -> Iterator[Client]:
    """QLESS pointed at the full server, for the `@qless_job(...).enqueue` path."""
    settings.QLESS = {"URL": full_server.url, "PUT_MEMORY_LIMIT": None}
    yield get_client()
    reset_clients()


def test_a_full_redis_refuses_puts_whole_with_an_oom_error(
    full_server: RedisServer, django_qless_on: Client, figures: dict[str, Any],
) -> None:
    client = qless_client(full_server, put_memory_limit=None)
    compressed_time(client)
    result = flood(client)
    refused_types = {type(error) for error in result.errors}
    traces = {jid: found for jid in result.refused if (found := left_behind(client, jid))}
    before = snapshot(client.redis)
    with pytest.raises(redis.OutOfMemoryError, match="maxmemory") as raised:
        qless_jobs.work.using(jid="enqueued-when-full", tags=PADDING).enqueue(ms=0)
    enqueue_wrote = snapshot(client.redis) != before
    report = audited(client)
    waiting = {jid for jid, (state, *_rest) in report.found.items() if state == "waiting"}
    lost = [jid for jid in result.acked if jid not in waiting]
    figures.update(acked=len(result.acked), refused=len(result.refused) + 1,
                   error=sorted(t.__name__ for t in refused_types)[0],
                   used_mb=round(used_memory(client) / 2**20, 2), lost=len(lost),
                   audit="clean" if report.clean else "DIRTY")
    assert len(result.acked) > 5000, "20 MB should hold thousands of 1 KB jobs"
    assert refused_types == {QueueFullError}  # Redis' own refusal, typed by the client
    assert all(isinstance(error, redis.OutOfMemoryError) for error in result.errors)
    assert all("maxmemory" in str(error) for error in result.errors)
    assert traces == {}, traces
    assert not enqueue_wrote, "a refused enqueue changed the keyspace"
    # As FCALL of the library Redis refuses the call before it runs; as EVALSHA of the
    # script, it is refused inside the script, at its first write.
    assert ("script:" in str(raised.value)) is not client.script.calls_library("put")
    assert lost == []
    assert report.clean, report.summary()
    assert report.jobs == len(result.acked)



def test_workers_wait_out_a_full_redis_then_drain_and_puts_resume(
    start_redis: Callable[..., RedisServer], fleets: Callable[..., Fleet],
    figures: dict[str, Any],
) -> None:
    server = start_redis("--maxmemory", str(DRAIN_MAXMEMORY), "--maxmemory-policy", "noeviction")
    client = qless_client(server, put_memory_limit=None)
    compressed_time(client)
    # Completing then deletes older completed jobs, so the drain itself frees memory.
    client.config.put("jobs-history-count", HISTORY_COUNT)
    put_ballast(server)
    result = flood(client, more=3)
    fleet = fleets(server.url, WORKERS, "q", *FAST)
    # Three refused pops each (one a second): the workers wait; none crashes or quits.
    settle(lambda: fleet.output().count("maxmemory") >= 3 * WORKERS, 10)
    ended_while_full = len(ended(fleet))
    full_mb = used_memory(client) / 2**20
    client.redis.delete("ballast")  # the operator frees memory: DEL is allowed above the limit
    drained, drained_mb, resumed, left, report, logs = drain_then_put(client, fleet, result)
    figures.update(jobs=len(result.acked), lost=len(left), duplicates=report.duplicates,
                   ended_while_full=ended_while_full, pops_refused=logs.count("maxmemory"),
                   restarts=fleet.restarts, full_mb=round(full_mb, 2),
                   drained_mb=round(drained_mb, 2), puts_after_drain=len(resumed),
                   audit="clean" if report.audit.clean else "DIRTY")
    assert ended_while_full == 0, "a pop went through above maxmemory"
    assert logs.count("maxmemory") >= 3 * WORKERS, "the workers never met the full Redis"
    assert fleet.restarts == 0 and len(fleet.live_pids()) == WORKERS
    assert "unexpected error" not in logs and "Traceback" not in logs
    assert drained, f"{len(set(result.acked) - ended(fleet))} of {len(result.acked)} not run"
    assert left == [] and report.duplicates == 0 and report.overlaps == []
    assert report.audit.clean, report.audit.summary()
    assert set(report.audit.states) <= {"complete"}, report.audit.states
    assert drained_mb < full_mb - BALLAST / 2**20, "the drain freed no memory"
    assert len(resumed) == RESUMED_PUTS


def put_ballast(server: RedisServer) -> None:
    """Write the ballast on a connection of its own, closed at once.

    Redis keeps a client's query buffer (about 1.4 MB after a 1 MB argument) until its
    cron trims it, about 2 s later; a flood shorter than that would fill Redis while the
    buffer is counted and then fall below the limit when it goes. A closed connection's
    buffer goes at once, so the flood fills Redis with the ballast alone.
    """
    with redis.Redis.from_url(server.url) as connection:
        connection.set("ballast", b"b" * BALLAST)


def drain_then_put(
    client: Client, fleet: Fleet, result: Flood
) -> tuple[bool, float, list[str], list[str], Outcome, str]:
    """Wait for the fleet to run the flood, put RESUMED_PUTS more and wait for those too.

    Returns: drained in time, MiB used after the drain, the new jids, the jids never run,
    the outcome (audit, duplicates) and the workers' logs.
    """
    drained = settle(lambda: ended(fleet) >= set(result.acked), 20)
    drained_mb = used_memory(client) / 2**20
    resumed = put_padded(client, RESUMED_PUTS)
    settle(lambda: ended(fleet) >= set(resumed), 10)
    done = ended(fleet)
    left = [jid for jid in [*result.acked, *resumed] if jid not in done]
    return drained, drained_mb, resumed, left, outcome(client, [], fleet), fleet.output()


def ended(fleet: Fleet) -> set[str]:
    """jids whose execution ran to its end (from the ledger, kept outside Redis)."""
    return {entry.jid for entry in ledger.read(fleet.ledger_dir) if entry.event == "end"}

def put_padded(client: Client, count: int) -> list[str]:
    """Put `count` 1 KB jobs; every one must be acknowledged."""
    queue = client.queue("q")
    return [queue.put("faults.work", {"args": [], "kwargs": {}}, tags=PADDING,
                      jid=f"resumed-{n}-{uuid.uuid4().hex[:8]}") for n in range(count)]


def test_above_the_limit_complete_and_heartbeat_are_refused_whole(
    full_server: RedisServer, figures: dict[str, Any],
) -> None:
    client = qless_client(full_server, put_memory_limit=None)
    compressed_time(client)
    queue = client.queue("q")
    for n in range(3):
        queue.put("faults.work", {"args": [], "kwargs": {}}, jid=f"held-{n}")
    done, beating, failing = queue.pop(3)
    result = flood(client, more=1)
    calls: dict[str, Callable[[], object]] = {
        "complete": done.complete, "heartbeat": beating.heartbeat, "pop": lambda: queue.pop(1)}
    refused = []
    for name, call in calls.items():
        before = snapshot(client.redis)
        with pytest.raises(redis.OutOfMemoryError, match="maxmemory"):
            call()
        assert snapshot(client.redis) == before, f"a refused {name} changed the keyspace"
        refused.append(name)
    # fail's first write removes the lock, so the script runs past the limit, all of it.
    failing.fail("full", "Redis was full")
    # The test's own client holds the two leases: they belong to a live worker.
    report = audit(client.redis, alive=lambda worker: worker == client.worker_name)
    states = {jid: report.found[jid][0] for jid in ("held-0", "held-1", "held-2")}
    figures.update(acked=len(result.acked), refused=" ".join(refused),
                   fail_above_limit=states["held-2"], audit="clean" if report.clean else "DIRTY")
    assert states == {"held-0": "running", "held-1": "running", "held-2": "failed"}
    assert report.clean, report.summary()


def test_with_the_guard_puts_stop_early_and_the_workers_drain_meanwhile(
    start_redis: Callable[..., RedisServer], fleets: Callable[..., Fleet],
    figures: dict[str, Any],
) -> None:
    server = start_redis("--maxmemory", str(DRAIN_MAXMEMORY), "--maxmemory-policy", "noeviction")
    client = qless_client(server)  # the default guard: puts refused above 90% of maxmemory
    compressed_time(client)
    client.config.put("jobs-history-count", HISTORY_COUNT)
    result = flood(client, more=3)
    refused_at_mb = used_memory(client) / 2**20
    fleet = fleets(server.url, WORKERS, "q", *FAST)
    drained, _, resumed, left, report, logs = drain_then_put(client, fleet, result)
    figures.update(jobs=len(result.acked), refused=len(result.refused),
                   error=sorted({type(e).__name__ for e in result.errors})[0],
                   refused_at_mb=round(refused_at_mb, 2),
                   maxmemory_mb=round(DRAIN_MAXMEMORY / 2**20, 2),
                   worker_oom_errors=logs.count("maxmemory"), lost=len(left),
                   duplicates=report.duplicates, puts_after_drain=len(resumed),
                   restarts=fleet.restarts, audit="clean" if report.audit.clean else "DIRTY")
    assert {type(error) for error in result.errors} == {QueueFullError}
    assert all("more than 90% of its maxmemory" in str(error) for error in result.errors)
    assert refused_at_mb < DRAIN_MAXMEMORY / 2**20  # refused before Redis' own limit
    assert logs.count("maxmemory") == 0, "a worker met the full Redis"
    assert drained and left == [] and report.duplicates == 0
    assert fleet.restarts == 0 and "Traceback" not in logs
    assert report.audit.clean, report.audit.summary()
    assert len(resumed) == RESUMED_PUTS
