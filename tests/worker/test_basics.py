"""The worker in-process: jobs run and complete, burst, max-jobs, queue order, names."""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable
from typing import Any

import redis

from django_qless import signals
from django_qless.core import Client
from django_qless.worker import Worker, WorkerOptions
from django_qless.worker.order import QueueOrder
from tests.support import script_calls as count_script_calls

from .conftest import SignalLog, job_state

Ledger = Callable[[], list[dict[str, Any]]]


def test_burst_runs_every_job_then_exits(qless: Client, put: Callable[..., str],
                                         run_worker: Callable[..., Worker], ledger: Ledger,
                                         redis_client: redis.Redis) -> None:
    jids = [put("worker.mark", str(n)) for n in range(3)]
    worker = run_worker("q")
    assert [job_state(qless, jid) for jid in jids] == ["complete"] * 3
    assert [entry["tag"] for entry in ledger()] == ["0", "1", "2"]
    assert {entry["worker"] for entry in ledger()} == {worker.name}
    assert worker.jobs_run == 3
    assert worker.stop.reason == "queues empty (burst)"
    # Deregistered at exit (a pop had registered it).
    assert redis_client.zscore("ql:workers", worker.name) is None


def test_burst_on_empty_queues_exits_at_once(run_worker: Callable[..., Worker]) -> None:
    started = time.monotonic()
    worker = run_worker("q", "other")
    assert time.monotonic() - started < 2.0
    assert worker.jobs_run == 0


def test_lifecycle_signals(put: Callable[..., str], run_worker: Callable[..., Worker],
                           sent: SignalLog) -> None:
    jid = put("worker.noop")
    worker = run_worker("q")
    assert sent.names() == ["worker_started", "job_started", "job_completed", "worker_stopped"]
    completed = sent.of("job_completed")[0]
    assert completed["jid"] == jid and completed["queue"] == "q"
    assert completed["klass"] == "worker.noop" and completed["worker"] == worker.name
    assert completed["duration"] >= 0
    assert completed["sender"].name == "worker.noop"
    assert sent.of("worker_started")[0]["sender"] is worker


def test_a_failing_receiver_does_not_change_the_job_or_stop_the_worker(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker], sent: SignalLog
) -> None:
    def broken(sender: Any, **kwargs: Any) -> None:
        raise RuntimeError("receiver bug")

    jids = [put("worker.noop"), put("worker.fail")]
    for signal in (signals.job_started, signals.job_completed, signals.job_failed):
        signal.connect(broken)
    try:
        worker = run_worker("q")
    finally:
        for signal in (signals.job_started, signals.job_completed, signals.job_failed):
            signal.disconnect(broken)
    assert [job_state(qless, jid) for jid in jids] == ["complete", "failed"]
    assert worker.outcomes == {"completed": 1, "failed": 1}
    assert sent.names() == ["worker_started", "job_started", "job_completed", "job_started",
                            "job_failed", "worker_stopped"]


def test_max_jobs_stops_a_non_burst_worker(qless: Client, put: Callable[..., str],
                                           run_worker: Callable[..., Worker]) -> None:
    jids = [put("worker.noop") for _ in range(5)]
    worker = run_worker("q", burst=False, max_jobs=2)
    states = [job_state(qless, jid) for jid in jids]
    assert states == ["complete", "complete", "waiting", "waiting", "waiting"]
    assert worker.stop.reason == "max jobs (2) reached"


def test_ordered_strategy_drains_queues_in_order(put: Callable[..., str],
                                                 run_worker: Callable[..., Worker],
                                                 ledger: Ledger) -> None:
    for queue in ("a", "b"):
        for n in range(2):
            put("worker.mark", f"{queue}{n}", queue=queue)
    run_worker("b", "a", strategy="ordered")
    assert [entry["tag"] for entry in ledger()] == ["b0", "b1", "a0", "a1"]


def test_round_robin_strategy_alternates(put: Callable[..., str],
                                         run_worker: Callable[..., Worker],
                                         ledger: Ledger) -> None:
    for queue in ("a", "b", "c"):
        for n in range(2):
            put("worker.mark", f"{queue}{n}", queue=queue)
    run_worker("a", "b", "c", strategy="round-robin")
    assert [entry["tag"] for entry in ledger()] == ["a0", "b0", "c0", "a1", "b1", "c1"]


def test_round_robin_skips_empty_queues() -> None:
    order = QueueOrder(["a", "b", "c"], "round-robin")
    assert order.round() == ("a", "b", "c")
    order.served("c")
    assert order.round() == ("a", "b", "c")
    order.served("a")
    assert order.round() == ("b", "c", "a")


def test_shuffle_strategy_tries_every_queue_in_varying_order() -> None:
    order = QueueOrder(["a", "b", "c"], "shuffle", rng=random.Random(7))  # noqa: S311
    rounds = [tuple(order.round()) for _ in range(60)]
    assert all(sorted(r) == ["a", "b", "c"] for r in rounds)
    assert len(set(rounds)) == 6  # every permutation shows up


def test_worker_names_are_unique_per_worker(qless: Client) -> None:
    options = WorkerOptions(queues=("q",), handle_signals=False)
    names = {Worker(options, client=qless).name for _ in range(3)}
    assert len(names) == 3
    for name in names:
        assert re.fullmatch(r"[A-Za-z0-9_.-]+-\d+-[0-9a-f]{8}", name)
    assert Worker(options.replace(name="fixed"), client=qless).name == "fixed"


def test_max_memory_stops_the_worker_after_the_job(qless: Client, put: Callable[..., str],
                                                   run_worker: Callable[..., Worker]) -> None:
    jids = [put("worker.noop") for _ in range(3)]
    worker = run_worker("q", burst=False, max_memory=1)  # any Python process is above 1 MiB
    assert [job_state(qless, jid) for jid in jids] == ["complete", "waiting", "waiting"]
    assert re.fullmatch(r"memory \d+ MiB above max 1 MiB", worker.stop.reason)


def test_next_job_comes_with_the_completion_and_goes_back_if_not_started(
    qless: Client, put: Callable[..., str]
) -> None:
    first, second = put("worker.noop"), put("worker.noop")
    worker = Worker(WorkerOptions(queues=("q",), handle_signals=False), client=qless)
    assert worker.run_once()
    assert job_state(qless, first) == "complete"
    assert job_state(qless, second) == "running"  # popped in the same round trip
    worker.stop.request("test")
    worker.shutdown()
    job = qless.get_job(second)
    assert job is not None and job.state == "waiting"
    assert [h.what for h in job.history] == ["put", "popped", "handed-back", "put"]
    assert job.history[2].extra["reason"] == "worker shutdown"


def test_a_flushed_script_is_loaded_again(qless: Client, put: Callable[..., str],
                                          run_worker: Callable[..., Worker]) -> None:
    jids = [put("worker.flush_scripts"), put("worker.noop"), put("worker.noop")]
    run_worker("q")
    assert [job_state(qless, jid) for jid in jids] == ["complete"] * 3


def test_a_worker_on_many_queues_pops_in_one_call_whatever_the_empty_ones(
    put: Callable[..., str], run_worker: Callable[..., Worker], ledger: Ledger,
    redis_client: redis.Redis,
) -> None:
    queues = [f"q{n:02d}" for n in range(40)]

    def script_calls() -> int:
        return count_script_calls(redis_client)

    redis_client.config_resetstat()
    run_worker(*queues, strategy="ordered")  # nothing to do: start-up and one empty pop
    idle = script_calls()
    for n in range(6):
        put("worker.mark", f"late{n}", queue=queues[-1])  # only the last queue has jobs
    put("worker.mark", "early", queue=queues[20])
    redis_client.config_resetstat()
    run_worker(*queues, strategy="ordered")
    assert [entry["tag"] for entry in ledger()] == ["early", *(f"late{n}" for n in range(6))]
    # A pop and a completion per job: not a pop per queue tried (40 per job before).
    assert script_calls() - idle <= 2 * 7, (idle, script_calls())
