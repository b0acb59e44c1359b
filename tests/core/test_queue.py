"""Queue: put, pop, peek, recur, counts, pause, per-queue settings."""

from __future__ import annotations

import re

import pytest

from django_qless.core import Client, InvalidArgumentError, QueueCounts
from tests.support import T0, FakeClock


def test_put_returns_a_uuid4_hex_jid_and_stores_the_job(client: Client) -> None:
    jid = client.queue("q").put("app.jobs.Send", {"to": "a@example.com"})
    assert re.fullmatch(r"[0-9a-f]{32}", jid)
    job = client.get_job(jid)
    assert job is not None
    assert (job.klass, job.queue_name, job.state) == ("app.jobs.Send", "q", "waiting")
    assert job.data == {"to": "a@example.com"}
    assert (job.priority, job.retries, job.remaining, job.tags) == (0, 5, 5, ())


def test_put_options_are_stored(client: Client) -> None:
    client.queue("q").put(
        "k", {}, jid="j", priority=7, tags=["a", "b"], retries=2, delay=30
    )
    job = client.get_job("j")
    assert job is not None
    assert (job.priority, job.tags, job.retries, job.state) == (7, ("a", "b"), 2, "scheduled")


def test_reput_without_options_keeps_existing_values(client: Client) -> None:
    queue = client.queue("q")
    queue.put("k", {"v": 1}, jid="j", priority=9, tags=["keep"], retries=1)
    queue.put("k", {"v": 2}, jid="j")
    job = client.get_job("j")
    assert job is not None
    assert (job.priority, job.tags, job.retries, job.data) == (9, ("keep",), 1, {"v": 2})


def test_reput_with_options_replaces_them(client: Client) -> None:
    queue = client.queue("q")
    queue.put("k", {}, jid="j", priority=9, tags=["old"])
    queue.put("k", {}, jid="j", priority=1, tags=[])
    job = client.get_job("j")
    assert job is not None
    assert (job.priority, job.tags) == (1, ())


def test_pop_leases_to_the_clients_worker(client: Client, clock: FakeClock) -> None:
    client.queue("q").put("k", {}, jid="j")
    (job,) = client.queue("q").pop()
    assert (job.jid, job.state, job.worker) == ("j", "running", "worker-1")
    assert job.expires == T0 + 60
    assert client.queue("q").pop() == []


def test_pop_order_is_priority_then_fifo(client: Client, clock: FakeClock) -> None:
    queue = client.queue("q")
    for jid, priority in [("p0", 10), ("p1", 5), ("p2", 0), ("p3", 5), ("p4", 0)]:
        queue.put("k", {}, jid=jid, priority=priority)
        clock.advance(1)
    assert [job.jid for job in queue.pop(10)] == ["p0", "p1", "p3", "p2", "p4"]


def test_peek_does_not_lease(client: Client, clock: FakeClock) -> None:
    queue = client.queue("q")
    queue.put("k", {}, jid="a")
    clock.advance(1)
    queue.put("k", {}, jid="b")
    assert [job.jid for job in queue.peek(5)] == ["a", "b"]
    assert all(job.state == "waiting" for job in queue.peek(5))
    assert len(queue.pop(5)) == 2


def test_pop_count_is_clamped_to_1000(client: Client) -> None:
    queue = client.queue("q")
    for n in range(1003):
        queue.put("k", {}, jid=f"j{n}")
    assert len(queue.pop(5000)) == 1000
    assert len(queue.pop(5000)) == 3


def test_delayed_job_becomes_available_at_its_time(client: Client, clock: FakeClock) -> None:
    queue = client.queue("q")
    queue.put("k", {}, jid="later", delay=10)
    assert queue.pop() == []
    clock.advance(9.5)
    assert queue.pop() == []
    clock.advance(0.5)
    assert [job.jid for job in queue.pop()] == ["later"]


def test_length_counts_running_waiting_and_scheduled(client: Client) -> None:
    queue = client.queue("q")
    queue.put("k", {}, jid="a")
    queue.put("k", {}, jid="b")
    queue.put("k", {}, jid="c", delay=60)
    queue.put("k", {}, jid="d", depends=["a"])
    queue.pop()
    assert queue.length() == 3


def test_counts(client: Client, clock: FakeClock) -> None:
    queue = client.queue("q")
    queue.put("k", {}, jid="a")
    queue.put("k", {}, jid="b")
    queue.put("k", {}, jid="c", delay=60)
    queue.put("k", {}, jid="d", depends=["b"])
    queue.recur("k", {}, 3600, jid="r", offset=3600)
    queue.pop()
    assert queue.counts() == QueueCounts(
        name="q", waiting=1, running=1, stalled=0, scheduled=1, depends=1, recurring=1,
        paused=False,
    )
    clock.advance(61)
    counts = queue.counts()
    assert (counts.running, counts.stalled, counts.scheduled, counts.waiting) == (0, 1, 0, 2)


def test_pause_and_unpause(client: Client) -> None:
    queue = client.queue("q")
    queue.put("k", {}, jid="a")
    queue.pause()
    assert queue.paused
    assert queue.pop() == []
    assert [job.jid for job in queue.peek()] == ["a"]
    queue.unpause()
    assert not queue.paused
    assert [job.jid for job in queue.pop()] == ["a"]


def test_jobs_by_state(client: Client) -> None:
    queue = client.queue("q")
    for n in range(4):
        queue.put("k", {}, jid=f"s{n}", delay=10 + n)
    queue.put("k", {}, jid="run")
    queue.pop()
    assert queue.jobs("running") == ["run"]
    assert queue.jobs("scheduled") == ["s0", "s1", "s2", "s3"]
    assert queue.jobs("scheduled", offset=1, count=2) == ["s1", "s2"]
    assert queue.jobs("depends") == []
    with pytest.raises(InvalidArgumentError):
        queue.jobs("waiting")


def test_waiting_pages_in_pop_order(client: Client, clock: FakeClock) -> None:
    queue = client.queue("q")
    for n in range(5):
        queue.put("k", {}, jid=f"j{n}", priority=10 if n == 3 else 0)
        clock.advance(1)
    assert queue.waiting() == ["j3", "j0", "j1", "j2", "j4"]
    assert queue.waiting(1, 2) == ["j0", "j1"]
    assert queue.waiting(10, 5) == []
    assert queue.waiting() == [job.jid for job in queue.peek(5)]
    with pytest.raises(InvalidArgumentError):
        queue.waiting(-1)


def test_stats_count_waits_and_runs(client: Client, clock: FakeClock) -> None:
    queue = client.queue("q")
    queue.put("k", {}, jid="a")
    clock.advance(5)
    (job,) = queue.pop()
    clock.advance(2)
    job.complete()
    stats = queue.stats()
    assert (stats.wait.count, stats.wait.mean) == (1, 5)
    assert (stats.run.count, stats.run.mean) == (1, 2)
    assert len(stats.wait.histogram) == 148
    assert stats.wait.histogram[5] == 1
    assert queue.stats(T0 - 86400).wait.count == 0


def test_heartbeat_setting_is_per_queue(client: Client, clock: FakeClock) -> None:
    queue = client.queue("q")
    assert queue.heartbeat == 60
    queue.heartbeat = 5
    assert queue.heartbeat == 5
    assert client.config.get("q-heartbeat") == 5
    queue.put("k", {}, jid="a")
    (job,) = queue.pop()
    assert job.expires == T0 + 5
    queue.heartbeat = None
    assert client.config.get("q-heartbeat") is None
    assert queue.heartbeat == 60


def test_max_concurrency_limits_pop(client: Client) -> None:
    queue = client.queue("q")
    assert queue.max_concurrency is None
    queue.max_concurrency = 2
    assert queue.max_concurrency == 2
    for n in range(5):
        queue.put("k", {}, jid=f"j{n}")
    assert len(queue.pop(5)) == 2
    assert queue.pop() == []
    queue.max_concurrency = None
    assert len(queue.pop(5)) == 3


def test_forget_removes_the_queue_name_only(client: Client) -> None:
    queue = client.queue("q")
    queue.put("k", {}, jid="a")
    client.queue("other").put("k", {}, jid="b")
    queue.forget()
    assert [counts.name for counts in client.queues()] == ["other"]
    assert client.get_job("a") is not None


def test_recur_returns_jid_and_spawns_on_pop(client: Client, clock: FakeClock) -> None:
    queue = client.queue("q")
    jid = queue.recur("k", {"n": 1}, 60, jid="every-minute")
    assert jid == "every-minute"
    (job,) = queue.pop()
    assert (job.jid, job.spawned_from_jid, job.data) == ("every-minute-1", "every-minute", {"n": 1})
    assert queue.pop() == []
    clock.advance(60)
    assert [j.jid for j in queue.pop()] == ["every-minute-2"]
