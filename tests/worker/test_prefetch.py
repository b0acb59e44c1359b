"""Popping ahead: the next job is popped while the current one runs, and never kept too long."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
import redis

from django_qless import signals
from django_qless.core import Batch, Client
from django_qless.worker import Worker, WorkerOptions
from django_qless.worker import monitor as monitor_module
from tests.support import script_calls as count_script_calls
from tests.support import wait_for

from .conftest import in_thread, job_state

#: Two short jobs first: the worker pops ahead once it has seen jobs are short.
WARM_UP = 2


def warm_up(put: Callable[..., str]) -> list[str]:
    """Short jobs that teach the worker its jobs are short."""
    return [put("worker.noop") for _ in range(WARM_UP)]


@pytest.mark.parametrize(("prefetch", "seen"), [(1, "running"), (0, "waiting")])
def test_the_next_job_is_popped_while_the_current_one_runs(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker],
    ledger: Callable[[], list[dict[str, Any]]], prefetch: int, seen: str,
) -> None:
    warm_up(put)
    put("worker.peek", "next")
    put("worker.noop", jid="next")
    worker = run_worker("q", prefetch=prefetch)
    [peeked] = [entry for entry in ledger() if entry["event"] == "peek"]
    assert peeked["state"] == seen
    assert peeked["holder"] == (worker.name if seen == "running" else "")
    assert job_state(qless, "next") == "complete"
    assert worker.outcomes == {"completed": WARM_UP + 2}


def test_completions_are_reported_in_order_once_each(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker]
) -> None:
    jids = [put("worker.noop") for _ in range(30)]
    completed: list[str] = []

    def keep(sender: Any, jid: str, **kwargs: Any) -> None:
        completed.append(jid)

    signals.job_completed.connect(keep, dispatch_uid="tests.prefetch.keep")
    try:
        worker = run_worker("q", prefetch=3)
    finally:
        signals.job_completed.disconnect(dispatch_uid="tests.prefetch.keep")
    assert completed == jids
    assert worker.outcomes == {"completed": 30} and worker.jobs_run == 30
    assert {job_state(qless, jid) for jid in jids} == {"complete"}
    assert not worker.fetcher.held.held and not worker.fetcher.batch.holding


def test_max_jobs_is_not_exceeded_by_jobs_popped_ahead(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker]
) -> None:
    jids = [put("worker.noop") for _ in range(8)]
    worker = run_worker("q", prefetch=4, max_jobs=5, burst=False)
    states = [job_state(qless, jid) for jid in jids]
    assert states == ["complete"] * 5 + ["waiting"] * 3
    for jid in jids[5:]:
        job = qless.get_job(jid)
        assert job is not None and [entry.what for entry in job.history] == ["put"]
    assert worker.jobs_run == 5


def test_a_job_held_behind_a_long_one_goes_back_to_its_queue(
    qless: Client, put: Callable[..., str], ledger: Callable[[], list[dict[str, Any]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(monitor_module, "HOLD_LIMIT", 0.2)
    warm_up(put)
    put("worker.sleep", 1.5, jid="long")
    put("worker.mark", "held", jid="held")
    worker = Worker(WorkerOptions(queues=("q",), burst=True, handle_signals=False),
                    client=qless)
    thread = in_thread(worker.run)
    wait_for(lambda: job_state(qless, "held") == "running", what="the job popped ahead")
    wait_for(lambda: job_state(qless, "held") == "waiting", timeout=1.0,
             what="the held job given back")
    assert [entry["event"] for entry in ledger() if entry["jid"] == "long"] == ["start"]
    held = qless.get_job("held")
    assert held is not None
    assert [entry.what for entry in held.history] == ["put", "popped", "handed-back", "put"]
    assert held.history[2].extra["reason"] == "held behind a long job"
    thread.join(10)
    assert not thread.is_alive()
    assert job_state(qless, "held") == "complete"  # popped again once the long job ended
    assert [entry["jid"] for entry in ledger() if entry["event"] in ("run", "end")] == [
        "long", "held"]


def test_a_held_job_canceled_before_it_starts_is_not_run(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker],
    ledger: Callable[[], list[dict[str, Any]]],
) -> None:
    warm_up(put)
    put("worker.cancel", "victim")
    put("worker.mark", "victim", jid="victim")
    put("worker.mark", "after")
    worker = run_worker("q")
    assert [entry.get("tag") for entry in ledger() if entry["event"] == "run"] == ["after"]
    assert job_state(qless, "victim") is None
    assert worker.outcomes["lock lost"] == 1


def test_a_job_held_a_while_is_heartbeated_first_and_skipped_if_lost(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker],
    ledger: Callable[[], list[dict[str, Any]]], monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Every held job counts as held long, and the cancel event is not kept for the start.
    monkeypatch.setattr("django_qless.worker.held.RECENT_TTL", 0.0)
    monkeypatch.setattr(monitor_module, "RECENT_TTL", 0.0)
    beats: list[str] = []
    original = Client.call

    def spy(self: Client, command: str, *args: Any) -> Any:
        if command == "heartbeat" and threading.current_thread() is threading.main_thread():
            beats.append(str(args[0]))
        return original(self, command, *args)

    monkeypatch.setattr(Client, "call", spy)
    warm_up(put)
    put("worker.cancel", "victim")
    put("worker.mark", "victim", jid="victim")
    put("worker.mark", "after", jid="after")
    worker = run_worker("q")
    assert [entry.get("tag") for entry in ledger() if entry["event"] == "run"] == ["after"]
    assert "victim" in beats and "after" in beats
    assert worker.outcomes["lock lost"] == 1


def test_a_slow_link_to_redis_does_not_turn_popping_ahead_off(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker],
    ledger: Callable[[], list[dict[str, Any]]], monkeypatch: pytest.MonkeyPatch,
) -> None:
    original = Batch.call_many

    def slow(self: Batch, calls: Any) -> list[Any]:
        time.sleep(0.15)  # a round trip longer than a short job's threshold
        return original(self, calls)

    monkeypatch.setattr(Batch, "call_many", slow)
    warm_up(put)
    put("worker.peek", "next")
    put("worker.noop", jid="next")
    worker = run_worker("q")
    [peeked] = [entry for entry in ledger() if entry["event"] == "peek"]
    assert peeked["state"] == "running" and peeked["holder"] == worker.name
    durations = worker.fetcher.durations
    assert durations.seconds is not None and durations.seconds < 0.1


def test_the_worker_gives_its_connection_back_when_the_queue_runs_dry(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Any]
) -> None:
    jids = [put("worker.noop"), put("worker.noop"), put("worker.fail"), put("worker.noop"),
            put("worker.noop")]
    worker = run_worker("q")
    assert [job_state(qless, jid) for jid in jids] == ["complete"] * 2 + ["failed"] + [
        "complete"] * 2
    assert worker.jobs_run == 5 and not worker.fetcher.batch.holding


def test_a_completion_and_the_next_pop_go_in_one_script_call(
    put: Callable[..., str], run_worker: Callable[..., Worker], redis_client: redis.Redis,
) -> None:
    def script_calls() -> int:
        return count_script_calls(redis_client)

    redis_client.config_resetstat()
    run_worker("q")  # nothing to do: start-up and one empty pop
    idle = script_calls()
    for _ in range(20):
        put("worker.noop")
    redis_client.config_resetstat()
    worker = run_worker("q")
    assert worker.outcomes == {"completed": 20}
    # The first pop, then one `complete.pop` per job (two calls per job without it).
    assert script_calls() - idle <= 20 + 1, (idle, script_calls())
    # Without a Tasks backend the jobs come lean: nobody read a history, so no `get` either.
    assert worker.fetcher.lean


def test_round_robin_pops_ahead_one_job_per_queue_with_the_completion(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker],
) -> None:
    jids = [put("worker.noop", queue=queue) for _ in range(10) for queue in ("a", "b")]
    worker = run_worker("a", "b", strategy="round-robin", prefetch=3)
    assert worker.outcomes == {"completed": 20}
    assert {job_state(qless, jid) for jid in jids} == {"complete"}


def test_a_pop_that_fails_beside_a_completion_leaves_the_job_completed(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker],
    redis_client: redis.Redis, workers: list[Worker], caplog: pytest.LogCaptureFixture,
) -> None:
    done = put("worker.noop", priority=10)  # popped first, alone (no popping ahead)
    corrupt = put("worker.noop")  # met by the pop that goes with done's completion
    redis_client.hset(f"ql:j:{corrupt}", "tags", "{not JSON")

    def stop(sender: Any, jid: str, **kwargs: Any) -> None:
        workers[-1].stop.request("test: first completion")

    signals.job_completed.connect(stop, dispatch_uid="tests.prefetch.stop")
    try:
        worker = run_worker("q", prefetch=0)
    finally:
        signals.job_completed.disconnect(dispatch_uid="tests.prefetch.stop")
    assert job_state(qless, done) == "complete"
    assert worker.outcomes == {"completed": 1}
    assert "pop from q failed: Complete.pop(): the pop failed" in caplog.text
    assert "unexpected error" not in caplog.text
