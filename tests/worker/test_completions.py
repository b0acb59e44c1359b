"""The pool's reports: sent without waiting, answered in order, and settled once each."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import redis

from django_qless import signals
from django_qless.core import Client, Job, LockLostError, commands
from django_qless.worker import Worker
from django_qless.worker.completions import Completions
from django_qless.worker.pool import PoolWorker
from tests.support import wait_for

from .conftest import job_state


def popped(qless: Client, put: Callable[..., str], count: int) -> list[Job]:
    """`count` jobs put and popped by `qless`'s worker."""
    for _ in range(count):
        put("worker.noop")
    jobs = qless.queue("q").pop(count)
    assert len(jobs) == count
    return jobs


def completion(qless: Client, job: Job) -> tuple[str, list[Any]]:
    """The `complete` of a popped job, its data unchanged."""
    return commands.complete(job.jid, qless.worker_name, job.queue_name, job.raw_data)


def test_a_posted_report_runs_at_once_and_its_answer_is_read_when_asked(
    qless: Client, put: Callable[..., str],
) -> None:
    [job] = popped(qless, put, 1)
    completions = Completions(qless)
    received: list[Any] = []
    asked = completions.post(completion(qless, job), received=received.append)
    # Redis runs it; nothing reads the answer until asked.
    wait_for(lambda: job_state(qless, job.jid) == "complete", what="the posted completion")
    assert received == [] and not asked.done and completions.owed == 1
    completions.collect()
    assert received == ["complete"] and asked.done
    assert completions.answer(asked) == "complete"
    completions.close()


def test_answers_reach_their_callbacks_in_the_order_the_reports_were_sent(
    qless: Client, put: Callable[..., str],
) -> None:
    jobs = popped(qless, put, 3)
    completions = Completions(qless)
    received: list[str] = []
    asks = [completions.post(completion(qless, job),
                             received=lambda answer, jid=job.jid: received.append(jid))
            for job in jobs]
    # The last report's answer is asked for first: the ones before it are read first.
    assert completions.answer(asks[-1]) == "complete"
    assert received == [job.jid for job in jobs]
    assert [completions.answer(asked) for asked in asks] == ["complete"] * 3
    completions.close()


def test_a_refused_report_answers_with_its_error_and_the_others_go_on(
    qless: Client, put: Callable[..., str],
) -> None:
    first, second = popped(qless, put, 2)
    completions = Completions(qless)
    wrong = commands.complete(first.jid, "another-worker", first.queue_name, first.raw_data)
    refused = completions.post(wrong)
    accepted = completions.post(completion(qless, second))
    assert isinstance(completions.answer(refused), LockLostError)
    assert completions.answer(accepted) == "complete"
    assert job_state(qless, first.jid) == "running"
    completions.close()


def test_a_report_sent_to_a_redis_without_the_script_runs_again_the_plain_way(
    qless: Client, put: Callable[..., str], redis_client: redis.Redis,
) -> None:
    [job] = popped(qless, put, 1)
    completions = Completions(qless)
    redis_client.script_flush()
    redis_client.function_flush()
    received: list[Any] = []
    asked = completions.post(completion(qless, job), received=received.append)
    assert completions.answer(asked) == "complete"
    # Called once, with the answer of the plain call (never with the missing script).
    assert received == ["complete"]
    assert job_state(qless, job.jid) == "complete"
    completions.close()


def test_a_pool_whose_slots_start_held_jobs_settles_each_completion_once(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker],
) -> None:
    jids = [put("worker.noop") for _ in range(200)]
    completed: list[str] = []

    def keep(sender: Any, jid: str, **kwargs: Any) -> None:
        completed.append(jid)

    signals.job_completed.connect(keep, dispatch_uid="tests.completions.keep")
    try:
        worker = run_worker("q", concurrency=4, prefetch=2)
    finally:
        signals.job_completed.disconnect(dispatch_uid="tests.completions.keep")
    assert isinstance(worker, PoolWorker)
    assert sorted(completed) == sorted(jids)
    assert worker.outcomes == {"completed": 200} and worker.jobs_run == 200
    assert {job_state(qless, jid) for jid in jids} == {"complete"}
    # Every answer was read: nothing held, no report owed on the kept connection.
    assert not worker.held and not worker.completions.owed


def test_max_jobs_counts_completions_sent_without_waiting(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker],
) -> None:
    jids = [put("worker.noop") for _ in range(80)]
    worker = run_worker("q", concurrency=4, prefetch=2, max_jobs=50, burst=False)
    states = [job_state(qless, jid) for jid in jids]
    assert states.count("complete") == 50 and states.count("waiting") == 30
    assert worker.jobs_run == 50 and worker.outcomes == {"completed": 50}


def test_a_long_job_does_not_hold_back_the_completion_signal_of_the_job_before_it(
    qless: Client, put: Callable[..., str], run_worker: Callable[..., Worker],
) -> None:
    short = [put("worker.noop") for _ in range(40)]
    long = [put("worker.nap", 1.5) for _ in range(2)]
    signalled: dict[str, float] = {}

    def keep(sender: Any, jid: str, **kwargs: Any) -> None:
        signalled[jid] = time.monotonic()

    signals.job_completed.connect(keep, dispatch_uid="tests.completions.late")
    try:
        run_worker("q", concurrency=2, prefetch=1)
    finally:
        signals.job_completed.disconnect(dispatch_uid="tests.completions.late")
    assert set(signalled) == set(short + long)
    # The slots took the long jobs with the last short ones' completions still owed: those
    # are settled while the long jobs run, not after them.
    last_short = max(signalled[jid] for jid in short)
    assert min(signalled[jid] for jid in long) - last_short > 1.0
