"""qless-py 0.11.4 (PyPI), unchanged, driving our qless.lua through its own API."""

from __future__ import annotations

import hashlib
import importlib.resources
from collections.abc import Callable
from typing import Any

import pytest

from django_qless.core import script_sha
from tests.support import T0, FakeClock

qless = pytest.importorskip("qless")
from qless.exceptions import LostLockException, QlessException  # noqa: E402

# qless-py logs through the deprecated `Logger.warn`.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

DEFAULT_CONFIG = {
    "application": "qless",
    "grace-period": 10,
    "heartbeat": 60,
    "histogram-history": 7,
    "jobs-history": 604800,
    "jobs-history-count": 50000,
    "stats-history": 30,
}

MakeClient = Callable[..., Any]


def whats(job: Any) -> list[str]:
    """The `what` of each history entry, oldest first."""
    return [entry["what"] for entry in job.history]


def test_client_registers_our_script_instead_of_its_own(qless_py: MakeClient) -> None:
    client = qless_py()
    vendored = importlib.resources.files("qless").joinpath("qless-core/qless.lua").read_bytes()
    assert client._lua.sha == script_sha()
    assert client._lua.sha != hashlib.sha1(vendored, usedforsecurity=False).hexdigest()
    assert client.config.all == DEFAULT_CONFIG


def test_put_pop_complete(qless_py: MakeClient, clock: FakeClock) -> None:
    client = qless_py("w1")
    queue = client.queues["jobs"]
    assert queue.put("app.Task", {"n": 1}, priority=3, tags=["a"], retries=2, jid="j1") == "j1"
    job = client.jobs["j1"]
    assert (job.state, job.queue_name, job.klass_name, job.worker_name) == (
        "waiting", "jobs", "app.Task", "")
    assert (job.data, job.priority, job.tags) == ({"n": 1}, 3, ["a"])
    assert (job.original_retries, job.retries_left, job.expires_at) == (2, 2, 0)
    assert job.history == [{"when": int(T0), "what": "put", "q": "jobs"}]
    assert len(queue) == 1

    clock.advance(5)
    popped = queue.pop()
    assert (popped.jid, popped.state, popped.worker_name) == ("j1", "running", "w1")
    assert popped.expires_at == T0 + 5 + 60
    assert queue.pop() is None
    popped["n"] = 2
    assert popped.complete() == "complete"

    done = client.jobs["j1"]
    assert (done.state, done.queue_name, done.data) == ("complete", "", {"n": 2})
    assert whats(done) == ["put", "popped", "done"]
    assert client.jobs.complete() == ["j1"]
    assert len(queue) == 0


def test_complete_advances_to_next_queue(qless_py: MakeClient, clock: FakeClock) -> None:
    client = qless_py("w1")
    client.queues["a"].put("app.Task", {}, jid="j")
    assert client.queues["a"].pop().complete("b") == "waiting"
    assert client.jobs["j"].queue_name == "b"
    assert client.queues["b"].pop().complete("c", delay=30) == "scheduled"
    assert client.queues["c"].jobs.scheduled() == ["j"]
    assert client.queues["c"].pop() is None
    clock.advance(30)
    assert client.queues["c"].pop().jid == "j"


def test_heartbeat_extends_only_the_owners_lock(qless_py: MakeClient, clock: FakeClock) -> None:
    client, other = qless_py("w1"), qless_py("w2")
    client.config["heartbeat"] = 10
    client.queues["q"].put("app.Task", {}, jid="j")
    with pytest.raises(LostLockException):
        client.jobs["j"].heartbeat()  # waiting, not running
    job = client.queues["q"].pop()
    assert job.expires_at == T0 + 10
    clock.advance(4)
    client.config["heartbeat"] = 20
    assert job.heartbeat() == T0 + 24
    assert job.ttl == 20
    assert client.jobs["j"].expires_at == T0 + 24
    with pytest.raises(LostLockException):
        other.jobs["j"].heartbeat()


def test_fail_failure_groups_and_unfail(qless_py: MakeClient, clock: FakeClock) -> None:
    client = qless_py("w1")
    queue = client.queues["q"]
    for jid in ("f1", "f2", "ok"):
        queue.put("app.Task", {}, jid=jid)
        clock.advance(1)  # equal put times would pop in reverse jid order
    with pytest.raises(QlessException):
        client.jobs["ok"].fail("boom", "not running")
    first, second = queue.pop(2)
    failed_at = int(clock.advance(3))
    assert first.fail("boom", "it broke") == first.jid
    assert second.fail("boom", "again") == second.jid

    assert client.jobs.failed() == {"boom": 2}
    group = client.jobs.failed("boom")
    assert group["total"] == 2
    assert [job.jid for job in group["jobs"]] == [second.jid, first.jid]  # newest first
    failed = client.jobs[first.jid]
    assert (failed.state, failed.worker_name, failed.queue_name) == ("failed", "", "q")
    assert failed.failure == {"group": "boom", "message": "it broke", "when": failed_at,
                              "worker": "w1"}

    assert client.unfail("boom", "again-q") == 2
    assert client.jobs.failed() == {}
    assert client.jobs[first.jid].state == "waiting"
    assert sorted(j.jid for j in client.queues["again-q"].pop(5)) == sorted([first.jid, second.jid])


def test_retry_counts_down_then_fails(qless_py: MakeClient, clock: FakeClock) -> None:
    client = qless_py("w1")
    queue = client.queues["q"]
    queue.put("app.Task", {}, jid="j", retries=2)
    with pytest.raises(QlessException):
        client.jobs["j"].retry()  # not running
    assert queue.pop().retry() == 1
    assert (client.jobs["j"].state, client.jobs["j"].retries_left) == ("waiting", 1)
    assert queue.pop().retry(delay=30) == 0
    assert client.jobs["j"].state == "scheduled"
    assert queue.pop() is None
    clock.advance(30)
    assert queue.pop().retry(group="flaky", message="gave up") == -1
    job = client.jobs["j"]
    assert job.state == "failed"
    assert (job.failure["group"], job.failure["message"]) == ("flaky", "gave up")
    assert client.jobs.failed() == {"flaky": 1}


def test_exhausted_plain_retry_fails_into_the_queue_group(qless_py: MakeClient) -> None:
    client = qless_py("w1")
    client.queues["q"].put("app.Task", {}, jid="j", retries=1)
    client.queues["q"].pop().retry()
    assert client.queues["q"].pop().retry() == -1
    assert client.jobs.failed() == {"failed-retries-q": 1}


def test_priorities_pop_highest_first(qless_py: MakeClient, clock: FakeClock) -> None:
    client = qless_py("w1")
    queue = client.queues["q"]
    queue.put("app.Task", {}, jid="low", priority=-5)
    queue.put("app.Task", {}, jid="normal")
    queue.put("app.Task", {}, jid="high", priority=10)
    clock.advance(1)
    queue.put("app.Task", {}, jid="normal2")
    assert [job.jid for job in queue.peek(10)] == ["high", "normal", "normal2", "low"]
    client.jobs["low"].priority = 20
    assert client.jobs["low"].priority == 20
    assert [job.jid for job in queue.pop(10)] == ["low", "high", "normal", "normal2"]


def test_tags(qless_py: MakeClient) -> None:
    client = qless_py()
    queue = client.queues["q"]
    assert client.jobs.tagged("nothing") == {"total": 0, "jobs": {}}
    queue.put("app.Task", {}, jid="a", tags=["shared"])
    queue.put("app.Task", {}, jid="b", tags=["shared", "b-only"])
    assert client.jobs["a"].tag("extra") == '["shared","extra"]'
    assert client.jobs.tagged("shared") == {"total": 2, "jobs": ["a", "b"]}
    assert client.jobs.tagged("extra") == {"total": 1, "jobs": ["a"]}
    assert client.tags() == ["shared"]
    client.jobs["a"].untag("shared")
    assert client.jobs["a"].tags == ["extra"]
    assert client.jobs.tagged("shared") == {"total": 1, "jobs": ["b"]}


def test_tracking(qless_py: MakeClient) -> None:
    client = qless_py()
    client.queues["q"].put("app.Task", {}, jid="a")
    client.queues["q"].put("app.Task", {}, jid="b")
    assert client.jobs.tracked() == {"jobs": [], "expired": {}}
    client.jobs["a"].track()
    client.track("b")
    assert client.jobs["a"].tracked is True
    assert sorted(job.jid for job in client.jobs.tracked()["jobs"]) == ["a", "b"]
    client.untrack("b")
    assert client.jobs["b"].tracked is False
    client.jobs["a"].cancel()
    assert client.jobs.tracked() == {"jobs": [], "expired": ["a"]}


def test_dependencies(qless_py: MakeClient, clock: FakeClock) -> None:
    client = qless_py("w1")
    queue = client.queues["q"]
    queue.put("app.Task", {}, jid="a")
    clock.advance(1)
    queue.put("app.Task", {}, jid="b")
    queue.put("app.Task", {}, jid="c", depends=["a", "b"])
    job = client.jobs["c"]
    assert job.state == "depends"
    assert job.dependencies == ["a", "b"]  # sorted, as Redis <= 4 returned SMEMBERS to scripts
    assert client.jobs["a"].dependents == ["c"]
    assert queue.jobs.depends() == ["c"]
    assert job.undepend("b") == 1
    assert client.jobs["c"].dependencies == ["a"]
    assert job.depend("b") == 1
    assert client.jobs["c"].dependencies == ["a", "b"]
    with pytest.raises(QlessException):
        client.jobs["a"].depend("b")  # `a` is not in the depends state

    assert queue.pop().complete() == "complete"  # a
    assert client.jobs["c"].dependencies == ["b"]
    clock.advance(1)  # c joins the work set now, behind b
    assert client.jobs["c"].undepend(all=True) == 1
    assert client.jobs["c"].state == "waiting"
    assert [j.jid for j in queue.pop(5)] == ["b", "c"]


def test_dependency_lists_are_sorted(qless_py: MakeClient) -> None:
    client = qless_py()
    queue = client.queues["q"]
    parents = ["p-delta", "p-alpha", "p-echo", "p-charlie", "p-bravo"]
    for jid in parents:
        queue.put("app.Task", {}, jid=jid)
    for jid in ("c-zulu", "c-mike", "c-alpha", "c-yankee"):
        queue.put("app.Task", {}, jid=jid, depends=parents)
    assert client.jobs["c-mike"].dependencies == sorted(parents)
    assert client.jobs["p-echo"].dependents == ["c-alpha", "c-mike", "c-yankee", "c-zulu"]


def test_recurring_jobs(qless_py: MakeClient, clock: FakeClock) -> None:
    client = qless_py("w1")
    queue = client.queues["q"]
    assert queue.recur("app.Tick", {"k": 1}, 60, jid="tick", priority=2, tags=["cron"],
                       retries=3) == "tick"
    template = client.jobs["tick"]
    assert isinstance(template, qless.RecurringJob)
    assert (template.interval, template.count, template.retries, template.priority) == (60, 0, 3, 2)
    assert (template.data, template.tags, template.queue_name) == ({"k": 1}, ["cron"], "q")
    assert template.next == T0
    assert queue.jobs.recurring() == ["tick"]
    assert queue.counts["recurring"] == 1

    spawned = queue.pop()
    assert spawned.jid == "tick-1"
    assert (spawned.data, spawned.tags, spawned.priority, spawned.original_retries) == (
        {"k": 1}, ["cron"], 2, 3)
    clock.advance(130)
    assert [job.jid for job in queue.pop(5)] == ["tick-2", "tick-3"]
    assert client.jobs["tick"].count == 3
    assert client.jobs["tick"].next == T0 + 180


def test_recurring_job_updates(qless_py: MakeClient) -> None:
    client = qless_py("w1")
    client.queues["q"].recur("app.Tick", {"k": 1}, 60, jid="tick", tags=["cron"])
    template = client.jobs["tick"]
    template.priority = 7
    template.interval = 30
    template.retries = 1
    template.data = {"k": 2}
    template.klass = RecurringTarget
    template.tag("extra")
    template.untag("cron")
    fresh = client.jobs["tick"]
    assert (fresh.priority, fresh.interval, fresh.retries, fresh.data) == (7, 30, 1, {"k": 2})
    assert fresh.klass_name == f"{__name__}.RecurringTarget"
    assert fresh.tags == ["extra"]
    template.move("other")
    assert client.jobs["tick"].queue_name == "other"
    assert client.queues["other"].jobs.recurring() == ["tick"]
    assert client.queues["q"].jobs.recurring() == []
    template.cancel()
    assert client.jobs["tick"] is None


class RecurringTarget:
    """A class for `RecurringJob.klass = ...`, which stores its dotted path."""


def test_config(qless_py: MakeClient, clock: FakeClock) -> None:
    client = qless_py("w1")
    config = client.config
    assert (config["heartbeat"], config["grace-period"], config["nope"]) == (60, 10, None)
    config["foo"] = 5
    assert config["foo"] == 5
    assert "foo" in config and len(config) == len(DEFAULT_CONFIG) + 1
    del config["foo"]
    assert config["foo"] is None
    queue = client.queues["q"]
    assert queue.heartbeat == 60
    queue.heartbeat = 15
    assert queue.heartbeat == 15
    queue.put("app.Task", {}, jid="j")
    assert queue.pop().expires_at == T0 + 15
    config.clear()
    assert config.all == DEFAULT_CONFIG


def test_pause_stats_and_counts(qless_py: MakeClient, clock: FakeClock) -> None:
    client = qless_py("w1")
    queue = client.queues["q"]
    queue.put("app.Task", {}, jid="j")
    queue.pause()
    assert queue.pop() is None
    assert queue.counts["paused"] is True
    queue.unpause()
    clock.advance(3)
    job = queue.pop()
    clock.advance(7)
    job.complete()
    stats = queue.stats()
    assert (stats["wait"]["count"], stats["wait"]["mean"]) == (1, 3)
    assert (stats["run"]["count"], stats["run"]["mean"]) == (1, 7)
    assert stats["wait"]["histogram"][3] == 1 and stats["run"]["histogram"][7] == 1
    assert client.queues.counts == [{
        "name": "q", "paused": False, "waiting": 0, "running": 0, "stalled": 0,
        "scheduled": 0, "depends": 0, "recurring": 0,
    }]
