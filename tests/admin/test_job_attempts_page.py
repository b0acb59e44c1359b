"""The job page's kind, return value, attempts and failure box (jobs driven by the core client)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client as HttpClient

from django_qless.admin.attempts import Outcome
from django_qless.connection import get_client
from django_qless.core import Client, Job
from django_qless.results import ERROR_EVENT
from tests.admin.conftest import KLASS, logged_in, url

TASK_DATA = {"args": [2], "kwargs": {}, "task": {"backend": "default", "takes_context": False}}


def popped(client: Client, queue: str = "jobs") -> Job:
    """The next job of a queue, leased to the client's worker."""
    [job] = client.queue(queue).pop()
    return job


def fail_attempt(job: Job, message: str, *, final: bool = False) -> None:
    """What the worker does when a job raises: record the error, then retry or fail."""
    job.log(ERROR_EVENT, {"exception_class_path": "builtins.ValueError", "traceback": message})
    if final:
        job.fail("jobs-ValueError", message)
    else:
        job.retry(group="jobs-ValueError", message=message)


def page(client: HttpClient, jid: str) -> tuple[Any, str]:
    """The job page's response and HTML."""
    response = client.get(url("job", jid=jid))
    assert response.status_code == 200
    return response, response.content.decode()


def test_a_task_completed_after_a_retry_shows_both_attempts_and_its_result(
    qless: Client, operator: HttpClient
) -> None:
    jid = qless.queue("jobs").put("app.tasks.double", TASK_DATA)
    fail_attempt(popped(qless), "Traceback\nValueError: first try")
    popped(qless).complete({**TASK_DATA, "result": {"doubled": 4, "api_token": "abc"}})
    response, html = page(operator, jid)
    first, second = response.context["attempts"]
    assert (first.outcome, second.outcome) == (Outcome.RETRIED, Outcome.COMPLETED)
    assert first.worker == second.worker == qless.worker_name
    assert first.error.exception == "builtins.ValueError"
    assert "Django task (backend &#x27;default&#x27;)" in html
    assert "Return value" in html and "&quot;doubled&quot;: 4" in html
    assert "abc" not in html  # masked like job data
    assert "ValueError: first try" in html and "<details" in html
    assert 'class="qless-failure"' not in html


def test_a_job_waiting_for_a_retry_shows_its_error_in_the_attempt_not_a_red_box(
    qless: Client, operator: HttpClient
) -> None:
    jid = qless.queue("jobs").put(KLASS, {"args": [1, 2], "kwargs": {}})
    fail_attempt(popped(qless), "Traceback\nValueError: later")
    response, html = page(operator, jid)
    [attempt] = response.context["attempts"]
    assert attempt.outcome is Outcome.RETRIED
    assert attempt.error.group == "jobs-ValueError"
    assert 'class="qless-failure"' not in html and "ValueError: later" in html
    assert "@qless_job function" in html and "Return value" not in html


def test_a_failed_job_keeps_its_failure_box_and_lists_every_attempt(
    qless: Client, operator: HttpClient
) -> None:
    jid = qless.queue("jobs").put(KLASS, {"args": [1, 2], "kwargs": {}}, retries=2)
    for number in (1, 2):
        fail_attempt(popped(qless), f"Traceback\nValueError: try {number}")
    fail_attempt(popped(qless), "Traceback\nValueError: try 3", final=True)
    response, html = page(operator, jid)
    outcomes = [a.outcome for a in response.context["attempts"]]
    assert outcomes == [Outcome.RETRIED, Outcome.RETRIED, Outcome.FAILED]
    assert 'class="qless-failure"' in html
    assert all(f"ValueError: try {n}" in html for n in (1, 2, 3))


def test_the_return_value_needs_the_job_data_permission(
    qless: Client, make_user: Callable[..., User]
) -> None:
    jid = qless.queue("jobs").put(KLASS, {"args": [1, 2], "kwargs": {}})
    popped(qless).complete({"args": [1, 2], "kwargs": {}, "result": "top secret value"})
    viewer = logged_in(make_user("viewer", perms=("view_qless",)))
    response, html = page(viewer, jid)
    assert response.context["result"] is None and response.context["has_result"]
    assert "top secret value" not in html and "Return value" in html
    assert "Hidden: seeing job data" in html


def test_a_job_nobody_took_has_no_attempts(qless: Client, operator: HttpClient) -> None:
    jid = qless.queue("jobs").put("Ruby::Job", {"x": 1})
    response, html = page(operator, jid)
    assert response.context["attempts"] == []
    assert "No worker has taken this job yet." in html and "not a registered job" in html


def test_jobs_run_by_the_worker_show_their_recorded_error_and_stored_result(
    settings: Any, qless_settings: dict[str, Any], operator: HttpClient
) -> None:
    settings.QLESS = {**qless_settings, "STORE_RESULTS": True}
    client = get_client()
    broken = client.queue("work").put("tests.testapp.qless_jobs.explode",
                                      {"args": ["no luck"], "kwargs": {}})
    added = client.queue("work").put(KLASS, {"args": [1, 2], "kwargs": {}})
    call_command("qless_worker", "work", burst=True, verbosity=0)
    response, html = page(operator, broken)
    [attempt] = response.context["attempts"]
    assert attempt.outcome is Outcome.FAILED
    assert attempt.error.exception == "builtins.RuntimeError"
    assert attempt.error.summary == "RuntimeError: no luck"
    response, html = page(operator, added)
    assert [a.outcome for a in response.context["attempts"]] == [Outcome.COMPLETED]
    assert response.context["result"] == "3"


def test_a_job_whose_worker_died_says_its_lease_expired_and_no_negative_retries(
    qless: Client, operator: HttpClient
) -> None:
    jid = qless.queue("jobs").put(KLASS, {"args": [1, 2], "kwargs": {}}, retries=0)
    now = qless.now()
    # Popped two leases ago by a worker that died at once: it never renewed the lease.
    dead = Client(qless.redis, worker_name="dead-1", clock=lambda: now - 120)
    assert popped(dead).jid == jid
    # Other workers' pops: the first finds the lease gone, one grace period later the next
    # one fails the job (no retry left).
    for later in (0.0, 11.0):
        at = functools.partial(float, now + later)
        other = Client(qless.redis, worker_name="alive-2", clock=at)
        assert other.queue("jobs").pop() == []
    job = qless.get_job(jid)
    assert job is not None and (job.state, job.remaining) == ("failed", -1)
    response, html = page(operator, jid)
    assert "-1 left" not in html
    assert "<dt>Retries</dt><dd>none left of 0 (used up)</dd>" in html
    [attempt] = response.context["attempts"]
    assert attempt.outcome is Outcome.LEASE_EXPIRED and attempt.worker == "dead-1"
    assert attempt.duration is None  # not the two leases it was held for
    row = html.split('class="qless-attempt ')[1].split("</tr>")[0]
    assert '<td class="qless-outcome">lease expired</td>' in row
    assert "Its lease expired by" in row and "worker dead-1 stopped renewing it" in row
    assert "With no retry left, qless failed the job at" in row
    assert "How long it ran is not known." in row
