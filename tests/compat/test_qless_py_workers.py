"""qless-py 0.11.4's workers, listeners and jobs shared with django_qless, on our qless.lua."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from django_qless.core import Client as CoreClient
from django_qless.core import LockLostError
from tests.compat.conftest import wait_for_subscribers
from tests.support import T0, FakeClock

qless = pytest.importorskip("qless")
from qless.exceptions import LostLockException, QlessException  # noqa: E402
from qless.workers import Worker  # noqa: E402
from qless.workers.serial import SerialWorker  # noqa: E402

from tests.compat.qless_py_jobs import Broken, Flaky, Greeter  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

MakeClient = Callable[..., Any]


class DrainingWorker(SerialWorker):
    """A serial worker that stops when its queues are empty and leaves signals alone."""

    def jobs(self) -> Iterator[Any]:
        for job in SerialWorker.jobs(self):
            if job is None:
                return
            yield job

    def signals(self, signals: tuple[str, ...] = ()) -> None:
        """Keep pytest's signal handlers."""

    def listen(self, listener: Any) -> None:
        """No lock-lost listener for a run that ends by itself (tested separately)."""


class RecordingWorker(Worker):
    """Records the jids qless-py's listener asks it to kill."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.killed: list[str] = []

    def kill(self, jid: str) -> None:
        self.killed.append(jid)


def test_serial_worker_processes_jobs(qless_py: MakeClient, tmp_path: Path) -> None:
    client = qless_py("serial")
    queue = client.queues["greet"]
    good = queue.put(Greeter, {"name": "ada"})
    bad = queue.put(Broken, {"name": "bob"})
    DrainingWorker(["greet"], client, interval=0, sandbox=str(tmp_path / "sandbox")).run()
    done = client.jobs[good]
    assert (done.state, done.data["greeting"]) == ("complete", "hello ada")
    failed = client.jobs[bad]
    assert failed.state == "failed"
    assert failed.failure["group"] == "greet-ValueError"
    assert "ValueError: no greeting today" in failed.failure["message"]
    assert client.jobs.failed() == {"greet-ValueError": 1}


def test_retry_decorator(qless_py: MakeClient) -> None:
    client = qless_py("w1")
    queue = client.queues["q"]
    queue.put(Flaky, {}, jid="j", tags=["transient"])
    queue.pop().process()
    assert (client.jobs["j"].state, client.jobs["j"].retries_left) == ("waiting", 4)
    client.jobs["j"].untag("transient")
    queue.pop().process()
    assert client.jobs["j"].state == "failed"
    assert client.jobs["j"].failure["group"] == "q-KeyError"


def test_workers_counts_and_resumable_jobs(qless_py: MakeClient, clock: FakeClock) -> None:
    one, two = qless_py("w1"), qless_py("w2")
    one.config["heartbeat"] = 10
    one.queues["q"].put("app.Task", {}, jid="j1")
    one.queues["q"].put("app.Task", {}, jid="j2")
    assert one.workers.counts == {}
    one.queues["q"].pop()
    clock.advance(5)
    two.queues["q"].pop()
    assert one.workers.counts == [
        {"name": "w2", "jobs": 1, "stalled": 0},
        {"name": "w1", "jobs": 1, "stalled": 0},
    ]
    taken = {job.jid for job in (one.jobs["j1"], one.jobs["j2"]) if job.worker_name == "w1"}
    assert one.workers["w1"] == {"jobs": sorted(taken), "stalled": []}
    assert [job.jid for job in Worker(["q"], one, resume=True).resume] == sorted(taken)
    assert Worker(["other"], one, resume=True).resume == []

    clock.advance(6)  # w1's lock (T0 + 10) has expired, w2's (T0 + 15) has not
    assert one.workers["w1"] == {"jobs": [], "stalled": sorted(taken)}
    assert one.queues["q"].jobs.stalled() == sorted(taken)
    assert one.queues["q"].counts["stalled"] == 1


def test_expired_lock_goes_to_the_next_worker(qless_py: MakeClient, clock: FakeClock) -> None:
    one, two = qless_py("w1"), qless_py("w2")
    one.config["heartbeat"] = 10
    one.config["grace-period"] = 5
    one.queues["q"].put("app.Task", {}, jid="j", retries=2)
    held = one.queues["q"].pop()
    clock.advance(10)
    assert two.queues["q"].pop() is None  # first expiry: a courtesy notice only
    assert one.jobs["j"].history[-1]["what"] == "timed-out"
    clock.advance(5)
    taken = two.queues["q"].pop()
    assert (taken.jid, taken.worker_name, taken.retries_left) == ("j", "w2", 1)
    with pytest.raises(LostLockException):
        held.heartbeat()
    with pytest.raises(QlessException):
        held.complete()
    assert taken.complete() == "complete"


def test_events_listener_sees_tracked_job_events(qless_py: MakeClient, clock: FakeClock) -> None:
    client = qless_py("w1")
    queue = client.queues["q"]
    for jid in ("j", "k", "m"):
        queue.put("app.Task", {}, jid=jid)
        clock.advance(1)
    seen: dict[str, list[str]] = {}
    for event in ("put", "popped", "completed", "failed", "canceled", "track", "untrack"):
        client.events.on(event, lambda jid, event=event: seen.setdefault(event, []).append(jid))
    with client.events.thread():
        wait_for_subscribers(client.redis, "ql:untrack")
        for jid in ("j", "k", "m"):
            client.jobs[jid].track()
        queue.put("app.Task", {}, jid="m")
        queue.pop().complete()
        queue.pop().fail("boom", "bad")
        client.jobs["m"].cancel()
        client.untrack("j")
    assert seen == {
        "track": ["j", "k", "m"],
        "put": ["m"],
        "popped": ["j", "k"],
        "completed": ["j"],
        "failed": ["k"],
        "canceled": ["m"],
        "untrack": ["j"],
    }


def test_worker_listener_gets_lock_lost_and_canceled(
    qless_py: MakeClient, redis_client: redis.Redis
) -> None:
    owner, admin = qless_py("w1"), qless_py("admin")
    worker = RecordingWorker(["q"], owner)
    for jid in ("moved", "timed", "gone"):
        owner.queues["q"].put("app.Task", {}, jid=jid)
    owner.queues["q"].pop(3)
    with worker.listener():
        wait_for_subscribers(redis_client, "ql:w:w1")
        admin.jobs["moved"].move("elsewhere")  # qless-py's put has no worker argument
        admin.jobs["timed"].timeout()
        admin.jobs["gone"].cancel()
    assert worker.killed == ["moved", "timed", "gone"]
    assert admin.jobs["moved"].queue_name == "elsewhere"
    assert admin.jobs["timed"].state == "stalled"


def test_job_from_qless_py_worked_by_django_qless(
    qless_py: MakeClient, redis_client: redis.Redis, clock: FakeClock
) -> None:
    py = qless_py("py")
    py.queues["shared"].put("app.Task", {"x": [1, 2]}, jid="from-py", tags=["t"], priority=4,
                            retries=3)
    core = CoreClient(redis_client, clock=clock, worker_name="core")
    [job] = core.queue("shared").pop()
    assert (job.jid, job.klass, job.data) == ("from-py", "app.Task", {"x": [1, 2]})
    assert (job.tags, job.priority, job.retries, job.worker) == (("t",), 4, 3, "core")
    assert (py.jobs["from-py"].state, py.jobs["from-py"].worker_name) == ("running", "core")
    clock.advance(2)
    assert job.complete({"x": [1, 2], "done": True}) == "complete"
    done = py.jobs["from-py"]
    assert (done.state, done.data) == ("complete", {"x": [1, 2], "done": True})
    assert [entry["what"] for entry in done.history] == ["put", "popped", "done"]


def test_job_from_django_qless_worked_by_qless_py(
    qless_py: MakeClient, redis_client: redis.Redis, clock: FakeClock
) -> None:
    core = CoreClient(redis_client, clock=clock, worker_name="core")
    core.queue("shared").put("app.Task", {"y": 1}, jid="from-core", tags=["u"], priority=1)
    py = qless_py("py")
    popped = py.queues["shared"].pop()
    assert (popped.jid, popped.data, popped.tags, popped.priority) == ("from-core", {"y": 1},
                                                                        ["u"], 1)
    assert core.get_job("from-core").worker == "py"
    clock.advance(1)
    assert popped.heartbeat() == T0 + 61
    popped.fail("py-group", "failed in qless-py")
    assert core.failed() == {"py-group": 1}
    failure = core.get_job("from-core").failure
    assert failure is not None and (failure.group, failure.worker) == ("py-group", "py")
    assert core.unfail("shared", "py-group") == 1
    assert py.queues["shared"].pop().complete() == "complete"
    assert core.get_job("from-core").state == "complete"


def test_qless_py_move_takes_the_job_from_a_django_qless_worker(
    qless_py: MakeClient, redis_client: redis.Redis, clock: FakeClock
) -> None:
    core = CoreClient(redis_client, clock=clock, worker_name="core")
    core.queue("q").put("app.Task", {}, jid="j")
    [held] = core.queue("q").pop()
    qless_py("py").jobs["j"].move("other")
    with pytest.raises(LockLostError):
        held.heartbeat()
    moved = core.get_job("j")
    assert moved is not None and (moved.state, moved.queue_name) == ("waiting", "other")
