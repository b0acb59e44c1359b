"""Sentry in the worker: a transaction and a scope per job, one event per failed attempt."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from django_qless.core import Client
from django_qless.worker import Worker

from . import sentry_jobs  # noqa: F401 - registers the jobs
from .sentry_support import SentryRun, crumbs, trace

Run = Callable[..., Worker]


def put(client: Client, klass: str, **kwargs: Any) -> str:
    """A job of the tests' format in queue q."""
    return client.queue("q").put(klass, {"args": [], "kwargs": kwargs})


def test_each_job_is_one_transaction_in_a_trace_of_its_own(
    sentry: SentryRun, qless: Client, run_worker: Run
) -> None:
    sentry.init()
    first, second = put(qless, "sentry.crumbs"), put(qless, "sentry.crumbs")
    worker = run_worker("q")
    sent = sentry.by_jid()
    assert set(sent) == {first, second}
    for jid, transaction in sent.items():
        assert transaction["transaction"] == "sentry.crumbs"
        assert transaction["transaction_info"] == {"source": "task"}
        assert trace(transaction)["op"] == "queue.process"
        assert trace(transaction)["status"] == "ok"
        assert trace(transaction)["data"]["messaging.message.id"] == jid
        # Its own tag only: not the one the job before it set.
        assert transaction["tags"] == {
            "qless.queue": "q", "qless.klass": "sentry.crumbs", "qless.jid": jid,
            "qless.attempt": "1", "qless.worker": worker.name, "left_by": jid}
    assert trace(sent[first])["trace_id"] != trace(sent[second])["trace_id"]


def test_consecutive_jobs_share_no_breadcrumb_tag_or_trace(
    sentry: SentryRun, qless: Client, run_worker: Run
) -> None:
    sentry.init()
    jids = [put(qless, "sentry.crumbs", fail=True) for _ in range(3)]
    run_worker("q")
    events = {event["tags"]["qless.jid"]: event for event in sentry.events()}
    assert set(events) == set(jids)
    for jid, event in events.items():
        assert [c for c in crumbs(event) if c.startswith("crumb")] == [f"crumb of {jid}"]
        assert event["tags"]["left_by"] == jid
    assert len({trace(event)["trace_id"] for event in events.values()}) == 3


def test_a_failed_attempt_is_one_exception_event_not_a_log_line(
    sentry: SentryRun, qless: Client, run_worker: Run
) -> None:
    sentry.init_without_dedupe()
    ok, bad = put(qless, "sentry.crumbs"), put(qless, "sentry.crumbs", fail=True,
                                                password="hunter2")
    worker = run_worker("q")
    [event] = sentry.events()
    [exception] = event["exception"]["values"]
    assert exception["type"] == "ValueError" and exception["value"] == f"failed {bad}"
    assert exception["mechanism"]["type"] == "qless"
    assert exception["mechanism"]["handled"] is False
    assert event["tags"] == {
        "qless.queue": "q", "qless.klass": "sentry.crumbs", "qless.jid": bad,
        "qless.attempt": "1", "qless.worker": worker.name, "qless.group": "q-ValueError",
        "left_by": bad}
    context = event["contexts"]["qless job"]
    assert context["jid"] == bad and context["attempt"] == 1
    assert context["data"] == {"args": [], "kwargs": {"fail": True, "password": "********"}}
    # The job's own transaction and breadcrumbs; the transaction failed.
    transactions = sentry.by_jid()
    assert trace(event)["trace_id"] == trace(transactions[bad])["trace_id"]
    assert trace(event)["span_id"] == trace(transactions[bad])["span_id"]
    assert trace(transactions[bad])["status"] == "internal_error"
    assert [c for c in crumbs(event) if c.startswith("crumb")] == [f"crumb of {bad}"]
    assert ok in transactions


def test_retried_then_failed_is_two_events_with_their_attempts(
    sentry: SentryRun, qless: Client, run_worker: Run
) -> None:
    sentry.init_without_dedupe()
    jid = qless.queue("q").put("sentry.flaky", {"args": [], "kwargs": {}}, retries=1)
    run_worker("q")
    job = qless.get_job(jid)
    assert job is not None and job.state == "failed"
    events = sentry.events()
    assert [(e["tags"]["qless.jid"], e["tags"]["qless.attempt"]) for e in events] == [
        (jid, "1"), (jid, "2")]
    assert {e["exception"]["values"][0]["mechanism"]["type"] for e in events} == {"qless"}


def test_jobs_without_the_integration_send_nothing(
    sentry: SentryRun, qless: Client, run_worker: Run
) -> None:
    sentry.init([])  # the default integrations only: no QlessIntegration
    put(qless, "sentry.crumbs", fail=True)
    run_worker("q")
    assert sentry.transactions() == []
    # The worker's ERROR line is what reports it then, as before.
    [event] = sentry.events()
    assert event["logger"] == "django_qless"


def check_own_scopes(sentry: SentryRun, jids: list[str]) -> None:
    """One event per job, with its own breadcrumb, tag and trace (its transaction's)."""
    events = {event["tags"]["qless.jid"]: event for event in sentry.events()}
    assert sorted(events) == sorted(jids)
    transactions = sentry.by_jid()
    for jid, event in events.items():
        assert [c for c in crumbs(event) if c.startswith("crumb")] == [f"crumb of {jid}"]
        assert event["tags"]["left_by"] == jid
        assert trace(event)["trace_id"] == trace(transactions[jid])["trace_id"]
        assert event["contexts"]["qless job"]["jid"] == jid
    assert len({trace(t)["trace_id"] for t in transactions.values()}) == len(jids)


def check_overlapped(sentry: SentryRun) -> None:
    """The jobs ran at the same time: each started before any of them ended."""
    transactions = sentry.by_jid().values()
    assert max(t["start_timestamp"] for t in transactions) < min(
        t["timestamp"] for t in transactions)


def test_thread_pool_jobs_each_keep_their_own_scope(
    sentry: SentryRun, qless: Client, run_worker: Run
) -> None:
    sentry.init()
    jids = [put(qless, "sentry.crumbs", pause=0.3, fail=True) for _ in range(4)]
    run_worker("q", concurrency=4)
    check_own_scopes(sentry, jids)
    check_overlapped(sentry)


def test_async_jobs_on_the_loop_each_keep_their_own_scope(
    sentry: SentryRun, qless: Client, run_worker: Run
) -> None:
    sentry.init()
    jids = [put(qless, "sentry.acrumbs", pause=0.3, fail=True) for _ in range(4)]
    run_worker("q", concurrency=4)
    check_own_scopes(sentry, jids)
    check_overlapped(sentry)


def test_an_isolated_job_is_captured_in_its_child_once(
    sentry: SentryRun, qless: Client, run_worker: Run
) -> None:
    sentry.init_without_dedupe()
    ok, bad = put(qless, "sentry.crumbs"), put(qless, "sentry.crumbs", fail=True)
    run_worker("q", isolation="process")
    [event] = sentry.events()
    assert event["tags"]["qless.jid"] == bad and event["_pid"] != os.getpid()
    assert event["exception"]["values"][0]["mechanism"]["type"] == "qless"
    assert set(sentry.by_jid()) == {ok, bad}


def test_a_requested_retry_is_no_failure(
    sentry: SentryRun, qless: Client, run_worker: Run
) -> None:
    sentry.init_without_dedupe()
    jid = qless.queue("q").put("worker.wants_retry", {"args": [60], "kwargs": {}})
    run_worker("q")
    assert sentry.events() == []
    assert trace(sentry.by_jid()[jid])["status"] == "aborted"


def test_trace_metadata_another_client_garbled_is_ignored(
    sentry: SentryRun, qless: Client, run_worker: Run
) -> None:
    sentry.init()
    garbled = [{"sentry": "not an object"}, {"sentry": {"sentry-trace": 5, "baggage": []}},
               {"sentry": {"sentry-trace": "nonsense"}}]
    jids = [qless.queue("q").put("sentry.ok", {"args": [], "kwargs": {}, "meta": meta})
            for meta in garbled]
    run_worker("q")
    sent = sentry.by_jid()
    assert sorted(sent) == sorted(jids)
    assert all(trace(t)["status"] == "ok" for t in sent.values())
    assert len({trace(t)["trace_id"] for t in sent.values()}) == len(jids)
