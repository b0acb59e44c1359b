"""Job: fields read from the script's job object, and every job command."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from django_qless.core import (
    Client,
    DependencyError,
    HistoryEntry,
    InvalidArgumentError,
    Job,
    JobDataError,
    JobNotFoundError,
    LockLostError,
    commands,
)
from tests.support import T0, FakeClock


def popped(client: Client, jid: str = "j", queue: str = "q", **put: object) -> Job:
    """Put one job and pop it."""
    client.queue(queue).put("k", {"n": 1}, jid=jid, **put)  # type: ignore[arg-type]
    (job,) = client.queue(queue).pop()
    assert job.jid == jid
    return job


def test_fields_from_a_fresh_job(client: Client) -> None:
    client.queue("q").put("pkg.Klass", {"a": [1, 2]}, jid="j", tags=["t"])
    job = client.get_job("j")
    assert job is not None
    assert job.raw_data == '{"a":[1,2]}'
    assert job.data == {"a": [1, 2]}
    assert (job.worker, job.expires, job.tracked, job.failure) == ("", 0, False, None)
    assert (job.spawned_from_jid, job.dependents, job.dependencies) == (None, (), ())
    assert job.history == (HistoryEntry(when=int(T0), what="put", extra={"q": "q"}),)
    assert job.history[0].queue == "q"
    assert job.queue.name == "q"


def test_data_that_is_not_a_json_object_raises_only_when_read(
    client: Client, redis_client: object
) -> None:
    client.queue("q").put("k", {}, jid="j")
    client.redis.hset("ql:j:j", "data", "{bad")
    job = client.get_job("j")
    assert job is not None
    assert job.raw_data == "{bad"
    with pytest.raises(JobDataError):
        _ = job.data
    client.redis.hset("ql:j:j", "data", "[1, 2]")
    with pytest.raises(JobDataError):
        _ = client.get_job("j").data  # type: ignore[union-attr]


def test_complete(client: Client, clock: FakeClock) -> None:
    job = popped(client)
    clock.advance(3)
    assert job.complete({"result": 42}) == "complete"
    stored = client.get_job("j")
    assert stored is not None
    assert (stored.state, stored.queue_name, stored.data) == ("complete", "", {"result": 42})
    assert [entry.what for entry in stored.history] == ["put", "popped", "done"]
    assert client.completed() == ["j"]


def test_complete_without_data_keeps_the_data(client: Client) -> None:
    job = popped(client)
    job.complete()
    assert client.get_job("j").data == {"n": 1}  # type: ignore[union-attr]


def test_complete_into_next_queue(client: Client, clock: FakeClock) -> None:
    assert popped(client).complete(next_queue="next") == "waiting"
    assert client.get_job("j").queue_name == "next"  # type: ignore[union-attr]
    assert popped_again(client, "next").complete(next_queue="later", delay=30) == "scheduled"
    assert client.queue("later").jobs("scheduled") == ["j"]


def popped_again(client: Client, queue: str) -> Job:
    """Pop the only job of a queue."""
    (job,) = client.queue(queue).pop()
    return job


def test_complete_next_with_depends(client: Client) -> None:
    client.queue("q").put("k", {}, jid="other")
    job = popped(client, "j", queue="first")
    assert job.complete(next_queue="q", depends=["other"]) == "depends"
    assert client.get_job("j").dependencies == ("other",)  # type: ignore[union-attr]


def test_complete_delay_without_next_is_refused_in_python(client: Client) -> None:
    job = popped(client)
    with pytest.raises(InvalidArgumentError):
        job.complete(delay=5)
    assert client.get_job("j").state == "running"  # type: ignore[union-attr]


def test_fail(client: Client, clock: FakeClock) -> None:
    job = popped(client)
    clock.advance(1)
    assert job.fail("q-ValueError", "Traceback...", {"partial": True}) == "j"
    stored = client.get_job("j")
    assert stored is not None
    assert stored.state == "failed"
    assert stored.failure is not None
    assert (stored.failure.group, stored.failure.message) == ("q-ValueError", "Traceback...")
    assert (stored.failure.worker, stored.failure.when) == ("worker-1", int(T0 + 1))
    assert stored.data == {"partial": True}
    assert client.failed() == {"q-ValueError": 1}


def test_retry_counts_down_then_fails(client: Client) -> None:
    job = popped(client, retries=1)
    assert job.retry() == 0
    job = popped_again(client, "q")
    assert job.retry(group="g", message="gave up") == -1
    stored = client.get_job("j")
    assert stored is not None
    assert stored.state == "failed"
    assert stored.failure is not None and stored.failure.group == "g"


def test_retry_with_delay_schedules(client: Client, clock: FakeClock) -> None:
    job = popped(client)
    assert job.retry(delay=10) == 4
    assert client.queue("q").pop() == []
    clock.advance(10)
    assert [j.jid for j in client.queue("q").pop()] == ["j"]


def test_retry_needs_group_and_message_together(client: Client) -> None:
    job = popped(client)
    with pytest.raises(InvalidArgumentError):
        job.retry(group="g")


def test_heartbeat_renews_the_lock_and_ttl(client: Client, clock: FakeClock) -> None:
    job = popped(client)
    assert job.ttl == 60
    clock.advance(40.5)
    assert job.ttl == 19.5
    assert job.heartbeat({"progress": 0.5}) == int(T0 + 40.5 + 60)
    assert job.ttl == 59.5
    assert client.get_job("j").data == {"progress": 0.5}  # type: ignore[union-attr]


def test_lock_lost_after_expiry_and_hand_off(
    client: Client, other: Client, clock: FakeClock
) -> None:
    job = popped(client, retries=5)
    clock.advance(61)
    assert other.queue("q").pop() == []  # first pass: courtesy notice, grace period
    clock.advance(11)
    (taken,) = other.queue("q").pop()
    assert taken.worker == "worker-2"
    for action in (job.heartbeat, job.complete, lambda: job.fail("g", "m"), job.retry):
        with pytest.raises(LockLostError):
            action()
    assert taken.complete() == "complete"


def test_cancel(client: Client) -> None:
    job = popped(client)
    assert job.cancel() == ["j"]
    assert client.get_job("j") is None


def test_timeout_hands_the_job_back(client: Client) -> None:
    job = popped(client)
    job.timeout()
    stored = client.get_job("j")
    assert stored is not None and stored.state == "stalled"
    with pytest.raises(LockLostError):
        job.complete()


def test_set_priority(client: Client) -> None:
    client.queue("q").put("k", {}, jid="a")
    client.queue("q").put("k", {}, jid="b")
    job = client.get_job("b")
    assert job is not None
    job.set_priority(10)
    assert job.priority == 10
    assert client.get_job("b").priority == 10  # type: ignore[union-attr]
    assert [j.jid for j in client.queue("q").peek(2)] == ["b", "a"]


def test_tag_and_untag(client: Client) -> None:
    client.queue("q").put("k", {}, jid="j")
    job = client.get_job("j")
    assert job is not None
    assert job.tag("a", "b") == ("a", "b")
    assert job.untag("a") == ("b",)
    assert client.get_job("j").tags == ("b",)  # type: ignore[union-attr]
    assert job.untag("b") == ()


def test_track_and_untrack(client: Client) -> None:
    client.queue("q").put("k", {}, jid="j")
    job = client.get_job("j")
    assert job is not None
    assert job.track() is True
    assert client.get_job("j").tracked is True  # type: ignore[union-attr]
    assert job.untrack() is True
    assert client.get_job("j").tracked is False  # type: ignore[union-attr]


def test_depend_undepend(client: Client) -> None:
    queue = client.queue("q")
    for jid in ("a", "b", "c"):
        queue.put("k", {}, jid=jid)
    queue.put("k", {}, jid="j", depends=["a"])
    job = client.get_job("j")
    assert job is not None
    job.depend("b", "c")
    assert set(client.get_job("j").dependencies) == {"a", "b", "c"}  # type: ignore[union-attr]
    job.undepend("a")
    assert set(client.get_job("j").dependencies) == {"b", "c"}  # type: ignore[union-attr]
    job.undepend_all()
    stored = client.get_job("j")
    assert stored is not None
    assert (stored.state, stored.dependencies) == ("waiting", ())


def test_dependency_released_by_completion(client: Client) -> None:
    queue = client.queue("q")
    queue.put("k", {}, jid="parent")
    queue.put("k", {}, jid="child", depends=["parent"])
    assert client.get_job("parent").dependents == ("child",)  # type: ignore[union-attr]
    (parent,) = queue.pop()
    parent.complete()
    assert client.get_job("child").state == "waiting"  # type: ignore[union-attr]


def test_log_appends_history(client: Client, clock: FakeClock) -> None:
    client.queue("q").put("k", {}, jid="j")
    job = client.get_job("j")
    assert job is not None
    clock.advance(5)
    job.log("checkpoint", {"step": 3})
    last = client.get_job("j").history[-1]  # type: ignore[union-attr]
    assert (last.when, last.what, last.extra) == (int(T0 + 5), "checkpoint", {"step": 3})


def test_requeue_failed_job(client: Client) -> None:
    job = popped(client)
    job.fail("g", "m")
    failed = client.get_job("j")
    assert failed is not None
    assert failed.requeue() == "j"
    stored = client.get_job("j")
    assert stored is not None
    assert (stored.state, stored.queue_name, stored.data) == ("waiting", "q", {"n": 1})
    assert client.failed() == {}


def test_requeue_of_deleted_job_raises(client: Client) -> None:
    client.queue("q").put("k", {}, jid="j")
    job = client.get_job("j")
    assert job is not None
    client.cancel("j")
    with pytest.raises(JobNotFoundError):
        job.requeue()


def test_move_keeps_data_and_options(client: Client) -> None:
    client.queue("q").put("k", {"x": 1}, jid="j", priority=3, tags=["t"])
    job = client.get_job("j")
    assert job is not None
    job.move("elsewhere")
    stored = client.get_job("j")
    assert stored is not None
    assert (stored.queue_name, stored.data, stored.priority, stored.tags) == (
        "elsewhere", {"x": 1}, 3, ("t",)
    )
    assert client.queue("q").length() == 0


def test_job_from_json_handles_empty_lists_as_objects(client: Client) -> None:
    obj = json.loads(client.call("get", client.queue("q").put("k", {})))
    obj.update(tags={}, dependents={}, dependencies={}, history={}, failure={})
    job = Job(client, obj)
    assert (job.tags, job.dependents, job.dependencies, job.history) == ((), (), (), ())
    assert job.failure is None


def test_rejected_cycle_writes_nothing(client: Client, keyspace: Callable[[], Any]) -> None:
    queue = client.queue("q")
    queue.put("k", {}, jid="root")
    queue.put("k", {}, jid="b", depends=["root"])
    queue.put("k", {}, jid="x", depends=["b"])
    before = keyspace()
    with pytest.raises(DependencyError):
        queue.put("k", {}, jid="b", depends=["x"])
    with pytest.raises(DependencyError):
        client.get_job("b").depend("x")  # type: ignore[union-attr]
    with pytest.raises(DependencyError):
        queue.put("k", {}, jid="x", depends=["x"])
    assert keyspace() == before


def test_a_lean_job_reads_its_history_and_dependents_when_asked(client: Client) -> None:
    done = popped(client, "done")
    client.queue("q").put("k", {}, jid="next")
    client.queue("q").put("k", {}, jid="after", depends=["next"])
    state, reply = client.run(commands.complete_pop("done", done.worker, "q", "{}", ["q"],
                                                    lean=True))
    assert state == "complete"
    assert ("history" not in reply) and ("dependents" not in reply)  # complete.pop's lean jobs
    [job] = client.jobs_from_json(reply)
    assert (job.jid, job.state) == ("next", "running")
    reads: list[str] = []
    get_job = client.get_job
    client.get_job = lambda jid: reads.append(jid) or get_job(jid)  # type: ignore[method-assign]
    assert [entry.what for entry in job.history] == ["put", "popped"]
    assert job.dependents == ("after",)
    assert reads == ["next"]  # one read of the whole job served both
    assert job.history == get_job("next").history  # type: ignore[union-attr]
