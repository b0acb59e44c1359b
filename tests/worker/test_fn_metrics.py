"""The worker counts each job by klass (executions, outcomes, run and wait times) and adds
the counts to the per-function figures with its presence publication, in every strategy."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
import redis

from django_qless.core import Client, keys, ms_buckets
from django_qless.core import fn_metrics as fm
from django_qless.worker import Worker
from django_qless.worker.fn_tally import FunctionTally
from django_qless.worker.presence import PresenceReporter

from .conftest import WorkerProcess


def hour(client: Client) -> dict[str, fm.Figures]:
    """Each klass' figures over the last hour."""
    return fm.read_list(client.redis, "1h", time.time()).totals()


@pytest.mark.parametrize("options", [
    {}, {"concurrency": 4}, {"isolation": "process"},
], ids=["serial", "threads", "isolated"])
def test_each_strategy_adds_executions_outcomes_and_times_by_klass(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker],
    options: dict[str, object]
) -> None:
    put("worker.sleep", 0.2)
    put("worker.noop")
    put("worker.noop")
    put("worker.fail")
    put("worker.flaky", retries=2)  # fails once, put back for a retry 10 s later
    run_worker("q", **options)
    found = hour(qless)
    noop, sleep = found["worker.noop"], found["worker.sleep"]
    assert (noop.executions, noop.completed, noop.failures, noop.retries) == (2, 2, 0, 0)
    assert (found["worker.fail"].executions, found["worker.fail"].failures) == (1, 1)
    assert (found["worker.flaky"].executions, found["worker.flaky"].retries) == (1, 1)
    assert 200 <= sleep.run_ms < 1500
    assert sum(sleep.run) == 1 and ms_buckets.bucket_of(200) <= sleep.run.index(1)
    # Every execution's wait is known, whether popped lean (with a completion) or not.
    waits = fm.read_histograms(qless.redis, "1h", time.time()).totals()
    assert sum(waits["worker.noop"].wait) == 2 and sum(waits["worker.fail"].wait) == 1
    window = fm.read_histograms(qless.redis, "1h", time.time())
    run, wait = window.overall()
    assert sum(run) == 5 and sum(wait) == 5
    assert sum(window.queue("q")[0]) == 5 and window.queue("other") == (
        fm.empty_histogram(), fm.empty_histogram())


def test_async_jobs_on_the_event_loop_are_counted(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker]
) -> None:
    put("worker.anap", 0.05)
    put("worker.anap", 0.05)
    run_worker("q", concurrency=2)
    anap = hour(qless)["worker.anap"]
    assert (anap.executions, anap.completed) == (2, 2) and anap.run_ms >= 100


def test_each_process_of_a_supervised_worker_adds_its_own(
    qless: Client, put: Callable[..., str], spawn: Callable[..., WorkerProcess]
) -> None:
    for _ in range(6):
        put("worker.noop")
    worker = spawn("q", "--processes", "2", "--burst")
    assert worker.wait() == 0, worker.output()
    noop = hour(qless)["worker.noop"]
    assert (noop.executions, noop.completed) == (6, 6)


def test_a_job_that_waited_lands_in_its_wait_bucket(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker]
) -> None:
    put("worker.noop")
    put("worker.noop")
    time.sleep(1.2)
    run_worker("q")
    wait = fm.read_histograms(qless.redis, "1h", time.time()).totals()["worker.noop"].wait
    assert sum(wait) == 2
    assert all(ms_buckets.lower_bound(i) >= 700 for i, n in enumerate(wait) if n)


def reporter(client: Client, functions: FunctionTally) -> PresenceReporter:
    """A presence reporter with nothing running."""
    return PresenceReporter(client, ("q",), lambda: None, lambda: (0, 0),
                            functions=functions)


def test_the_publication_writes_each_resolution_with_its_expiry_and_the_totals(
    qless: Client, redis_client: redis.Redis
) -> None:
    tally = FunctionTally()
    tally.count("app.task", "q", "completed", 0.120, 0.004)
    tally.count("app.task", "q", "lock lost", 9.0, None)  # not an execution's end
    reporter(qless, tally).maybe_publish()
    now = qless.now()
    for resolution in fm.RESOLUTIONS:
        slot = resolution.slot_of(now)
        main, extra = keys.fn_slot(resolution.name, slot), keys.fn_extra(resolution.name, slot)
        assert resolution.keep - 5 <= redis_client.ttl(main) <= resolution.keep
        stored = redis_client.hgetall(main)
        assert stored["n:app.task"] == "1" and stored["ms:app.task"] == "120"
        assert stored[f"rh:{ms_buckets.bucket_of(120)}:app.task"] == "1"
        if not resolution.extra:  # per day: only what the list of functions reads
            assert redis_client.exists(extra) == 0
            continue
        assert resolution.keep - 5 <= redis_client.ttl(extra) <= resolution.keep
        stored = redis_client.hgetall(extra)
        assert stored[f"wh:{ms_buckets.bucket_of(4)}:app.task"] == "1"
        assert stored[f"ar:{ms_buckets.bucket_of(120)}"] == "1"
        assert stored[f"qr:{ms_buckets.bucket_of(120)}:q"] == "1"
    totals = redis_client.hgetall(keys.FN_TOTALS)
    assert redis_client.ttl(keys.FN_TOTALS) == -1  # lifetime counters never expire
    assert totals["n:app.task"] == "1" and not any(k.startswith("wh:") for k in totals)
    assert tally.take() == {}


def test_counts_survive_a_failed_publication(qless: Client, redis_server: object) -> None:
    unreachable = Client(redis.Redis(port=1, socket_connect_timeout=0.2), worker_name="w")
    tally = FunctionTally()
    tally.count("app.task", "q", "failed", 0.25, None)
    reporter(unreachable, tally).maybe_publish()  # logged, not raised
    kept = tally.take()
    assert kept[fm.FAILED, "app.task", -1] == 1 and kept[fm.RUN_MS, "app.task", -1] == 250
    assert not any(kind == fm.KLASS_WAIT for kind, _, _ in kept)  # no wait was known
