"""The audit and the overlap check find each kind of damage they look for (none on real data)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from django_qless.core import Client
from tests.faults import ledger
from tests.faults.audit import audit
from tests.faults.checks import Cut, overlaps, put_jobs, qless_client, rerun_problems, self_kills
from tests.redis_harness import RedisServer

pytestmark = pytest.mark.faults


@pytest.fixture
def client(server: RedisServer) -> Client:
    """A database with jobs in every state the suite produces."""
    made = qless_client(server)
    made.config.put("heartbeat", 3)
    jids = put_jobs(made, 5, lambda n: {})
    put_jobs(made, 1, lambda n: {}, delay=60)
    popped = made.queue("q").pop(count=3)
    popped[0].complete()
    popped[1].fail("q-ValueError", "boom")
    assert len(jids) == 5
    return made


def test_real_data_is_clean(client: Client) -> None:
    report = audit(client.redis, alive=lambda worker: worker == client.worker_name)
    assert report.clean, report.summary()
    assert dict(report.states) == {"waiting": 2, "scheduled": 1, "running": 1, "complete": 1,
                                   "failed": 1}


@pytest.mark.parametrize(("damage", "found"), [
    (lambda c, jid: c.redis.zadd("ql:q:q-work", {jid: 0}), "in 2 places"),
    (lambda c, jid: c.redis.hset(f"ql:j:{jid}", "state", "complete"), "state complete but"),
    (lambda c, jid: c.redis.hset(f"ql:j:{jid}", "priority", "nan"), "priority is NaN"),
    (lambda c, jid: c.redis.hset(f"ql:j:{jid}", "remaining", "-2"), "remaining=-2 < -1"),
    (lambda c, jid: c.redis.hset(f"ql:j:{jid}", "retries", "many"), "is not a number"),
    (lambda c, jid: c.redis.delete(f"ql:j:{jid}"), "has no job hash"),
    (lambda c, jid: c.redis.hset(f"ql:j:{jid}", "queue", "other"), "queue field 'other'"),
])
def test_each_kind_of_damage_is_found(damage: Callable[[Client, str], object], found: str,
                                      client: Client) -> None:
    running = client.redis.zrange("ql:q:q-locks", 0, -1)[0].decode()
    damage(client, running)
    report = audit(client.redis, alive=lambda worker: worker == client.worker_name)
    assert any(found in problem for problem in report.problems), report.problems


def test_a_lock_of_a_dead_worker_is_found(client: Client) -> None:
    report = audit(client.redis, alive=lambda worker: False)
    assert any("which is not alive" in problem for problem in report.problems)


def test_a_failed_job_in_the_wrong_group_is_found(client: Client) -> None:
    (failed,) = client.redis.lrange("ql:f:q-ValueError", 0, -1)
    client.redis.lrem("ql:f:q-ValueError", 0, failed)
    client.redis.lpush("ql:f:q-OtherError", failed)
    report = audit(client.redis)
    assert any("failure group 'q-ValueError' but in ql:f:q-OtherError" in p
               for p in report.problems), report.problems


def entry(jid: str, event: str, pid: int, t: float) -> ledger.Entry:
    """A ledger line."""
    return ledger.Entry(jid=jid, event=event, pid=pid, worker=f"w-{pid}-x", t=t)


@pytest.mark.parametrize(("entries", "deaths", "expected"), [
    # Second run starts while the first is still going: an overlap.
    ([entry("j", "start", 1, 0), entry("j", "start", 2, 1), entry("j", "end", 1, 2),
      entry("j", "end", 2, 3)], {}, 1),
    # The first run's process died (SIGKILL) before the second started: fine.
    ([entry("j", "start", 1, 0), entry("j", "start", 2, 5), entry("j", "end", 2, 6)],
     {1: 4.0}, 0),
    # The first run never ended and its process lives on: an overlap.
    ([entry("j", "start", 1, 0), entry("j", "start", 2, 5), entry("j", "end", 2, 6)], {}, 1),
    # Interrupted by the worker (abort) before the second started: fine.
    ([entry("j", "start", 1, 0), entry("j", "abort", 1, 1), entry("j", "start", 2, 5),
      entry("j", "end", 2, 6)], {}, 0),
    # A job that killed its own process: fine.
    ([entry("j", "start", 1, 0), entry("j", "killed", 1, 0.1), entry("j", "start", 2, 5),
      entry("j", "end", 2, 6)], {}, 0),
])
def test_overlapping_executions_are_found(entries: list[ledger.Entry],
                                          deaths: dict[int, float], expected: int) -> None:
    assert len(overlaps(entries, deaths)) == expected


def test_a_job_killing_its_process_ends_the_other_runs_of_that_process() -> None:
    # At --concurrency N the kill ends every run of the process, not only the killer's.
    entries = [entry("k", "start", 1, 0), entry("j", "start", 1, 0), entry("k", "killed", 1, 1),
               entry("j", "start", 2, 5), entry("j", "end", 2, 6)]
    assert self_kills(entries) == {1: 1}
    assert overlaps(entries, self_kills(entries)) == []


#: Two runs of `j` and of `k`: in 1, then in 2.
RUNS = [entry("j", "start", 1, 0), entry("k", "start", 1, 0), entry("j", "start", 2, 5),
        entry("k", "start", 2, 5)]


@pytest.mark.parametrize(("cuts", "concurrency", "found"), [
    # Run again after their worker was killed with them in flight: fine.
    ([Cut(1, frozenset({"j", "k"}))], 2, ""),
    # Their worker was never cut off: re-runs without a cause.
    ([Cut(3, frozenset({"j", "k"}))], 2, "(not cut off)"),
    # One not in flight when its worker was killed.
    ([Cut(1, frozenset({"k"}))], 2, "though not in flight"),
    # More re-runs after one kill than the worker has slots.
    ([Cut(1, frozenset({"j", "k"}))], 1, "more than its 1 slot(s)"),
])
def test_reruns_not_caused_by_a_cut_are_found(cuts: list[Cut], concurrency: int,
                                              found: str) -> None:
    problems = rerun_problems(RUNS, cuts, concurrency)
    assert problems == [] if not found else any(found in line for line in problems), problems


def test_the_ledger_skips_a_line_still_being_written(tmp_path: Path) -> None:
    whole = '{"jid": "a", "event": "start", "pid": 1, "worker": "w", "t": 1.0}\n'
    (tmp_path / "1.jsonl").write_text(whole + '{"jid": "b", "ev')
    assert [entry.jid for entry in ledger.read(tmp_path)] == ["a"]
