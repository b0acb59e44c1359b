"""Client: identity, clock, and the cross-queue queries and bulk commands."""

from __future__ import annotations

import json
import os
import re
import socket
from collections.abc import Callable
from typing import Any

import pytest
import redis

from django_qless.core import (
    Client,
    ConfigValueError,
    DependencyError,
    InvalidArgumentError,
    Job,
    JobNotFoundError,
    QueueCounts,
    WorkerCounts,
)
from django_qless.core import client as client_module
from tests.support import FakeClock


def test_default_worker_name_is_host_pid_random(redis_client: redis.Redis) -> None:
    first, second = Client(redis_client), Client(redis_client)
    host = re.sub(r"[^A-Za-z0-9_.-]", "_", socket.gethostname())
    assert re.fullmatch(rf"{re.escape(host)}-{os.getpid()}-[0-9a-f]{{8}}", first.worker_name)
    assert first.worker_name != second.worker_name


def test_explicit_worker_name_is_used_for_pop(client: Client) -> None:
    client.queue("q").put("k", {}, jid="j")
    assert client.queue("q").pop()[0].worker == "worker-1"


def test_every_call_uses_the_injected_clock(client: Client, clock: FakeClock) -> None:
    clock.now = 1234.5
    jid = client.queue("q").put("k", {})
    assert client.get_job(jid).history[0].when == 1234  # type: ignore[union-attr]
    assert client.now() == 1234.5


def test_call_passes_now_then_arguments(client: Client) -> None:
    assert client.call("config.get", "heartbeat") == 60


def test_get_job_unknown_is_none(client: Client) -> None:
    assert client.get_job("missing") is None


def test_get_jobs_batches_and_skips_unknown(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(7):
        client.queue("q").put("k", {}, jid=f"j{n}")
    monkeypatch.setattr(client_module, "CHUNK", 3)
    calls: list[tuple[Any, ...]] = []
    real_call = client.call

    def counting(command: str, *args: Any) -> Any:
        calls.append((command, *args))
        return real_call(command, *args)

    monkeypatch.setattr(client, "call", counting)
    jobs = client.get_jobs([f"j{n}" for n in range(7)] + ["missing"])
    assert [job.jid for job in jobs] == [f"j{n}" for n in range(7)]
    assert [len(call) - 1 for call in calls] == [3, 3, 2]
    assert client.get_jobs([]) == []


def test_queries_on_an_empty_database(client: Client) -> None:
    assert client.queues() == []
    assert client.failed() == {}
    assert (client.tracked().jobs, client.tracked().expired) == ((), ())
    assert client.completed() == []
    assert client.top_tags() == []
    assert client.workers.counts() == []


def test_queues_lists_counts_in_first_seen_order(client: Client, clock: FakeClock) -> None:
    client.queue("b").put("k", {})
    clock.advance(1)
    client.queue("a").put("k", {})
    assert client.queues() == [QueueCounts(name="b", waiting=1), QueueCounts(name="a", waiting=1)]


def test_config_get_set_unset_and_numeric_coercion(client: Client) -> None:
    config = client.config
    assert config.get("heartbeat") == 60
    assert config.get("application") == "qless"
    assert config.get("not-set") is None
    config.set("heartbeat", "30")
    assert config.get("heartbeat") == 30
    config.set("grace-period", 2.5)
    assert config.get("grace-period") == 2.5
    config.set("application", "shop")
    everything = config.all()
    assert everything["heartbeat"] == 30
    assert everything["application"] == "shop"
    assert everything["jobs-history-count"] == 50000
    config.unset("heartbeat")
    assert config.get("heartbeat") == 60


def test_planted_bad_config_value_raises_on_read(client: Client) -> None:
    client.redis.hset("ql:config", "heartbeat", "abc")
    with pytest.raises(ConfigValueError):
        client.config.get("heartbeat")
    with pytest.raises(ConfigValueError):
        client.config.all()
    with pytest.raises(ConfigValueError):
        _ = client.queue("q").heartbeat


def test_workers(client: Client, other: Client, clock: FakeClock) -> None:
    client.queue("q").put("k", {}, jid="a", priority=1)
    client.queue("q").put("k", {}, jid="b")
    client.queue("q").pop()
    clock.advance(1)
    other.queue("q").pop()
    clock.advance(59.5)  # worker-1's lock (T0+60) has expired; worker-2's (T0+61) has not
    assert client.workers.counts() == [
        WorkerCounts(name="worker-2", jobs=1, stalled=0),
        WorkerCounts(name="worker-1", jobs=0, stalled=1),
    ]
    mine = client.workers.jobs("worker-1")
    assert (mine.jobs, mine.stalled) == ((), ("a",))
    client.workers.deregister("worker-1")
    assert [w.name for w in client.workers.counts()] == ["worker-2"]


def test_failed_groups_pages_and_unfail(client: Client, clock: FakeClock) -> None:
    queue = client.queue("q")
    for n in range(3):
        queue.put("k", {}, jid=f"j{n}")
        clock.advance(1)
    for job in queue.pop(3):
        clock.advance(1)
        job.fail("g", f"boom {job.jid}")
    assert client.failed() == {"g": 3}
    page = client.failed_jobs("g", 0, 2)
    assert (page.total, page.jids) == (3, ("j2", "j1"))
    assert [job.jid for job in page.jobs] == ["j2", "j1"]
    assert client.failed_jobs("g", 2, 2).jids == ("j0",)
    assert client.unfail("retry-here", "g", 2) == 2
    assert client.failed() == {"g": 1}
    assert sorted(job.jid for job in client.queue("retry-here").peek(5)) == ["j0", "j1"]


def test_tracked_and_expired(client: Client) -> None:
    client.queue("q").put("k", {}, jid="a")
    client.queue("q").put("k", {}, jid="b")
    assert client.track("a") and client.track("b")
    with pytest.raises(JobNotFoundError):
        client.track("missing")
    client.cancel("b")
    tracked = client.tracked()
    assert [job.jid for job in tracked.jobs] == ["a"]
    assert tracked.expired == ("b",)
    assert client.untrack("a")
    assert client.tracked().jobs == ()


def test_tagged_and_top_tags(client: Client, clock: FakeClock) -> None:
    queue = client.queue("q")
    for n in range(3):
        queue.put("k", {}, jid=f"j{n}", tags=["common"] + (["rare"] if n == 0 else []))
        clock.advance(1)
    page = client.tagged("common", 0, 2)
    assert page.total == 3
    assert len(page.jids) == 2
    assert all(isinstance(job, Job) for job in page.jobs)
    assert client.tagged("common", 2, 2).total == 3
    assert client.tagged("nothing").jids == ()
    assert client.top_tags() == ["common"]


def test_jobs_and_completed(client: Client, clock: FakeClock) -> None:
    queue = client.queue("q")
    for n in range(3):
        queue.put("k", {}, jid=f"j{n}")
        clock.advance(1)
    for job in queue.pop(3):
        clock.advance(1)
        job.complete()
    assert client.completed() == ["j2", "j1", "j0"]
    assert client.completed(1, 1) == ["j1"]
    assert client.jobs("complete") == ["j2", "j1", "j0"]
    queue.put("k", {}, jid="s", delay=10)
    assert client.jobs("scheduled", "q") == ["s"]
    with pytest.raises(InvalidArgumentError):
        client.jobs("scheduled")


def test_cancel_many_in_batches(client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    for n in range(7):
        client.queue("q").put("k", {}, jid=f"j{n}")
    monkeypatch.setattr(client_module, "CHUNK", 3)
    assert sorted(client.cancel(*[f"j{n}" for n in range(7)])) == [f"j{n}" for n in range(7)]
    assert client.queue("q").length() == 0


def test_cancel_parent_and_children_split_across_batches(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    queue = client.queue("q")
    queue.put("k", {}, jid="p1")
    queue.put("k", {}, jid="p2")
    queue.put("k", {}, jid="c1", depends=["p1"])
    queue.put("k", {}, jid="c2", depends=["p2"])
    monkeypatch.setattr(client_module, "CHUNK", 2)
    # Batches [p1, c2] and [p2, c1]: each refers to a dependent in the other one.
    assert sorted(client.cancel("p1", "c2", "p2", "c1")) == ["c1", "c2", "p1", "p2"]
    assert client.get_jobs(["p1", "p2", "c1", "c2"]) == []


def test_cancel_refused_keeps_everything(
    client: Client, keyspace: Callable[[], Any]
) -> None:
    client.queue("q").put("k", {}, jid="p")
    client.queue("q").put("k", {}, jid="c", depends=["p"])
    before = keyspace()
    with pytest.raises(DependencyError):
        client.cancel("p")
    assert keyspace() == before


def test_timeout_many(client: Client, clock: FakeClock) -> None:
    for n in range(3):
        client.queue("q").put("k", {}, jid=f"j{n}")
    client.queue("q").pop(3)
    client.timeout("j0", "j2")
    states = {job.jid: job.state for job in client.get_jobs(["j0", "j1", "j2"])}
    assert states == {"j0": "stalled", "j1": "running", "j2": "stalled"}


def test_get_job_reply_shape(client: Client) -> None:
    jid = client.queue("q").put("k", {})
    assert set(json.loads(client.call("get", jid))) >= {
        "jid", "klass", "state", "queue", "worker", "tracked", "priority", "expires",
        "retries", "remaining", "data", "tags", "history", "failure", "spawned_from_jid",
        "dependents", "dependencies",
    }


def test_track_and_untrack_report_whether_anything_changed(client: Client) -> None:
    client.queue("q").put("k", {}, jid="a")
    assert client.untrack("a") is False
    assert client.track("a") is True
    assert client.untrack("a") is True
    assert client.untrack("a") is False
